use super::expr::free_names;
use super::*;

fn calls(x: &Extracted) -> Vec<(&str, &str)> {
    x.examples
        .iter()
        .map(|e| (e.call.as_str(), e.expected.as_str()))
        .collect()
}

#[test]
fn doctest_blocks_give_the_call_and_the_printed_value() {
    let src = r#"
def double(xs):
    """Every element twice.
    >>> double([1, 2])
    [2, 4]
    >>> double([])
    []
    >>> double([3]) == [6]
    >>> import os
    """
    raise NotImplementedError
"#;
    let x = python_file(src, None);
    assert_eq!(
        calls(&x),
        vec![
            ("double([1, 2])", "[2, 4]"),
            ("double([])", "[]"),
            ("double([3]) == [6]", "True")
        ]
    );
    assert_eq!(x.examples[0].form, Form::Doctest);
    assert_eq!(x.examples[2].form, Form::DoctestAssert);
    assert_eq!(x.examples[0].line, 4, "the line in the file");
    assert!(x.unread.is_empty(), "{:?}", x.unread);
}

#[test]
fn doctest_continuation_lines_join_the_call() {
    let src = "def add(a, b):\n    \"\"\"\n    >>> add(1,\n    ...     2)\n    3\n    \"\"\"\n";
    assert_eq!(calls(&python_file(src, None)), vec![("add(1, 2)", "3")]);
}

#[test]
fn the_prose_forms_are_read() {
    let src = r#"
def score(word, bonus=0):
    """Points of a word.

    Examples:
    score("ab") ==> 3
    score("b") -> 2
    score("") == 0
    score("a", bonus=2) should return 3.
    score("zz") ➞ 52
    - score("x", 1) = 25
    """
"#;
    let x = python_file(src, None);
    assert_eq!(
        calls(&x),
        vec![
            (r#"score("ab")"#, "3"),
            (r#"score("b")"#, "2"),
            (r#"score("")"#, "0"),
            (r#"score("a", bonus=2)"#, "3"),
            (r#"score("zz")"#, "52"),
            (r#"score("x", 1)"#, "25"),
        ]
    );
    assert!(x.examples.iter().all(|e| e.form == Form::Inline));
}

#[test]
fn input_output_pairs_use_parameter_names_when_they_match() {
    let src = r#"
def pick(nums, k):
    """
    Example 1:
        Input: nums = [3, 1, 2], k = 2
        Output: [1, 2]
    Example 2:
        Input: a = [5], b = 1
        Output: [5]
    Input: ([4], 1)
    """
"#;
    let x = python_file(src, None);
    assert_eq!(
        calls(&x),
        vec![
            ("pick(nums=[3, 1, 2], k=2)", "[1, 2]"),
            ("pick([5], 1)", "[5]")
        ]
    );
    assert_eq!(x.unread.len(), 1, "the input without an output is reported");
    assert_eq!(x.unread[0].why, "an input with no output line after it");
}

#[test]
fn for_the_output_should_be() {
    let src = r#"
def digits(n, base):
    """Sum of digits.
    For n = 123, base = 10 the output should be 6.
    For n = 5, base = 2, the output should be 2
    """
"#;
    let x = python_file(src, None);
    assert_eq!(
        calls(&x),
        vec![
            ("digits(n=123, base=10)", "6"),
            ("digits(n=5, base=2)", "2")
        ]
    );
    assert!(x.examples.iter().all(|e| e.form == Form::ForOutput));
}

#[test]
fn a_recurrence_is_not_an_example_and_is_reported() {
    let src = r#"
def seq(n):
    """
    seq(0) -> 0
    seq(n) -> seq(n-1) + seq(n-2).
    seq(5) == the fifth term
    """
"#;
    let x = python_file(src, None);
    assert_eq!(calls(&x), vec![("seq(0)", "0")]);
    let whys: Vec<&str> = x.unread.iter().map(|u| u.why).collect();
    assert_eq!(
        whys,
        vec![
            "the call uses a name the file does not define",
            "the result is not a Python value"
        ]
    );
}

#[test]
fn calls_of_helpers_and_comprehensions_are_allowed() {
    let src = r#"
def base(x):
    return x

def wrap(x):
    """
    >>> wrap([base(i) for i in range(2)])
    [0, 1]
    >>> wrap(lambda y: y)(3)
    3
    """
"#;
    let x = python_file(src, Some(&["wrap".to_string()]));
    assert_eq!(x.examples.len(), 2, "{:?}", x.unread);
}

#[test]
fn only_the_named_functions_are_read() {
    let src = "def a():\n    \"\"\">>> a()\n    1\n    \"\"\"\n\ndef b():\n    \"\"\">>> b()\n    2\n    \"\"\"\n";
    let x = python_file(src, Some(&["b".to_string()]));
    assert_eq!(calls(&x), vec![("b()", "2")]);
}

#[test]
fn task_text_examples_about_the_files_functions() {
    let src = "def median(values):\n    raise NotImplementedError\n";
    let task =
        "Implement median(values). median([1, 3, 2]) == 2 and median([4]) == 4; other(1) == 2.";
    let x = python_task_text(task, src);
    assert_eq!(
        calls(&x),
        vec![("median([1, 3, 2])", "2"), ("median([4])", "4")]
    );
}

#[test]
fn duplicates_are_kept_once() {
    let src = "def f(x):\n    \"\"\"\n    f(1) == 2\n    >>> f(1)\n    2\n    \"\"\"\n";
    assert_eq!(python_file(src, None).examples.len(), 1);
}

#[test]
fn nothing_in_a_file_without_docstrings_or_that_does_not_parse() {
    assert_eq!(python_file("x = 1\n", None), Extracted::default());
    assert_eq!(python_file("def (:\n", None), Extracted::default());
    assert_eq!(python_file("", None), Extracted::default());
}

#[test]
fn a_deeply_nested_example_is_refused_without_exhausting_the_stack() {
    let deep = format!("{}1{}", "(".repeat(20_000), ")".repeat(20_000));
    assert!(free_names(&deep).is_none(), "longer than an example may be");
    let nested = format!("f({}1{})", "[".repeat(900), "]".repeat(900));
    let names = free_names(&nested).expect("an expression");
    assert!(names.contains("f"));
}

#[test]
fn free_names_know_what_is_bound() {
    let names = free_names("f([g(i) for i in xs], key=len, x=a.b)").expect("expression");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(names, vec!["a", "f", "g", "len", "xs"]);
    assert!(
        free_names("x = 1").is_none(),
        "a statement, not an expression"
    );
    assert!(free_names("the fifth term").is_none());
}
