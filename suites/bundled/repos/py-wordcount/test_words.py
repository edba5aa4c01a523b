import unittest
from words import word_counts

class WordCountTest(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(word_counts("a b a"), {"a": 2, "b": 1})

    def test_empty(self):
        self.assertEqual(word_counts(""), {})

if __name__ == "__main__":
    unittest.main()
