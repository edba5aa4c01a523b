import unittest
from stats import median

class HiddenMedianTest(unittest.TestCase):
    def test_even_takes_the_lower_middle(self):
        self.assertEqual(median([4, 1, 3, 2]), 2)
        self.assertEqual(median([10, 20]), 10)
