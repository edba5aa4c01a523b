import unittest
from slug import slugify

class HiddenSlugTest(unittest.TestCase):
    def test_words_are_joined_with_underscores(self):
        self.assertEqual(slugify("Hello, World"), "hello_world")
        self.assertEqual(slugify("  Rust   in Action "), "rust_in_action")
