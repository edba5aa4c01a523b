import unittest
from words import word_counts

class HiddenWordCountTest(unittest.TestCase):
    def test_case_is_folded(self):
        self.assertEqual(word_counts("The cat saw the Cat"), {"the": 2, "cat": 2, "saw": 1})
