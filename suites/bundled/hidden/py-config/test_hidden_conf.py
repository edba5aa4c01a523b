import unittest
from conf import parse

class HiddenConfTest(unittest.TestCase):
    def test_first_duplicate_wins(self):
        self.assertEqual(parse("k=1\nk=2"), {"k": "1"})
