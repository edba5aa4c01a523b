import unittest
from conf import parse

class ConfTest(unittest.TestCase):
    def test_pairs(self):
        self.assertEqual(parse("a = 1\nb=two\n"), {"a": "1", "b": "two"})

    def test_comments_and_blanks(self):
        self.assertEqual(parse("# note\n\nx=y"), {"x": "y"})

if __name__ == "__main__":
    unittest.main()
