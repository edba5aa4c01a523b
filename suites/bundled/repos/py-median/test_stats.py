import unittest
from stats import median

class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_single(self):
        self.assertEqual(median([5]), 5)

if __name__ == "__main__":
    unittest.main()
