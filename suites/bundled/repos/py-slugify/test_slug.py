import unittest
from slug import slugify

class SlugTest(unittest.TestCase):
    def test_single_word(self):
        self.assertEqual(slugify("Hello"), "hello")

    def test_punctuation_is_dropped(self):
        self.assertEqual(slugify("Wow!"), "wow")

if __name__ == "__main__":
    unittest.main()
