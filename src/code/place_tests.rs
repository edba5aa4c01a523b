//! Placing code blocks by definition.

use super::*;
use crate::code::reply::read;

const STUB: &str = "from typing import List\n\n\ndef helper(x):\n    return x * 2\n\n\ndef f(numbers: List[int]) -> int:\n    \"\"\"Sum of doubles.\"\"\"\n    raise NotImplementedError\n";

fn files(path: &'static str, text: &'static str) -> impl Fn(&str) -> Option<String> {
    move |p: &str| (p == path).then(|| text.to_string())
}

fn targets() -> Vec<String> {
    vec!["solution.py".to_string()]
}

#[test]
fn a_bare_definition_replaces_its_namesake_and_keeps_the_rest() {
    let reply = read(
        "```python\nimport math\n\ndef f(numbers):\n    return sum(helper(n) for n in numbers)\n\nprint(f([1]))\n```\n",
    );
    let placed = place(&reply, &files("solution.py", STUB), &targets()).expect("placed");
    let c = &placed[0].content;
    assert_eq!(placed[0].path, "solution.py");
    assert!(
        c.starts_with("from typing import List\nimport math\n"),
        "{c}"
    );
    assert!(c.contains("def helper(x):"), "{c}");
    assert!(c.contains("return sum(helper(n)"), "{c}");
    assert!(!c.contains("NotImplementedError"), "{c}");
    assert!(!c.contains("print("), "{c}");
    assert!(placed[0].notes.iter().any(|n| n.contains("left out 1")));
}

#[test]
fn a_definition_written_without_its_docstring_keeps_the_old_one() {
    let reply = read("```python\ndef f(numbers):\n    return 0\n```\n");
    let placed = place(&reply, &files("solution.py", STUB), &targets()).expect("placed");
    assert!(
        placed[0]
            .content
            .contains("def f(numbers):\n    \"\"\"Sum of doubles.\"\"\"\n    return 0\n"),
        "{}",
        placed[0].content
    );
    let own = read("```python\ndef f(numbers):\n    \"\"\"Mine.\"\"\"\n    return 0\n```\n");
    let placed = place(&own, &files("solution.py", STUB), &targets()).expect("placed");
    assert!(placed[0].content.contains("\"\"\"Mine.\"\"\""));
    assert!(!placed[0].content.contains("Sum of doubles"));
}

#[test]
fn the_stub_echoed_back_changes_nothing() {
    let reply = read(&format!("solution.py\n```python\n{STUB}```\n"));
    let placed = place(&reply, &files("solution.py", STUB), &targets()).expect("placed");
    assert_eq!(placed[0].content, STUB);
}

#[test]
fn code_that_does_not_parse_is_refused_with_its_line() {
    let reply = read("```python\ndef f(numbers):\n    return sum(numbers}\n```\n");
    match place(&reply, &files("solution.py", STUB), &targets()) {
        Err(PlaceError::Syntax(m)) => assert!(m.contains("line 2"), "{m}"),
        other => panic!("{other:?}"),
    }
    let body = read("```python\n    return 1\n```\n");
    assert!(place(&body, &files("solution.py", STUB), &targets()).is_err());
}

#[test]
fn new_definitions_go_before_the_main_block_and_methods_are_found() {
    let text = "class A:\n    def m(self):\n        return 1\n\nif __name__ == \"__main__\":\n    print(A().m())\n";
    let reply = read("```python\ndef m(self):\n    return 2\n\ndef g():\n    pass\n```\n");
    let placed = place(&reply, &files("a.py", text), &["a.py".to_string()]).expect("placed");
    let c = &placed[0].content;
    assert!(c.contains("    def m(self):\n        return 2\n"), "{c}");
    let g = c.find("def g").expect("g");
    assert!(g < c.find("if __name__").expect("main"), "{c}");
}

#[test]
fn search_replace_and_new_files() {
    let reply = read(
        "solution.py\n<<<<<<< SEARCH\n    raise NotImplementedError   \n=======\n    return 0\n>>>>>>> REPLACE\n\nnew.py\n```python\nX = 1\n```\n",
    );
    let placed = place(&reply, &files("solution.py", STUB), &targets()).expect("placed");
    assert_eq!(placed.len(), 2);
    let new = placed.iter().find(|p| p.path == "new.py").expect("new");
    assert_eq!(new.content, "X = 1\n");
    let sol = placed
        .iter()
        .find(|p| p.path == "solution.py")
        .expect("sol");
    assert!(sol.content.ends_with("    return 0\n"), "{}", sol.content);
    let missing = read("solution.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n");
    assert!(matches!(
        place(&missing, &files("solution.py", STUB), &targets()),
        Err(PlaceError::Unplaced(_))
    ));
}

#[test]
fn a_block_without_a_path_among_several_files_goes_where_its_name_is() {
    let two = |p: &str| match p {
        "a.py" => Some("def f():\n    pass\n".to_string()),
        "b.py" => Some("def g():\n    pass\n".to_string()),
        _ => None,
    };
    let targets = vec!["a.py".to_string(), "b.py".to_string()];
    let reply = read("```python\ndef g():\n    return 1\n```\n");
    let placed = place(&reply, &two, &targets).expect("placed");
    assert_eq!(placed[0].path, "b.py");
    let neither = read("```python\ndef h():\n    return 1\n```\n");
    assert!(matches!(
        place(&neither, &two, &targets),
        Err(PlaceError::Unplaced(_))
    ));
}

#[test]
fn rust_functions_and_impl_methods() {
    let text = "use std::fmt;\n\nstruct S;\n\nimpl S {\n    fn a(&self) -> u32 {\n        0\n    }\n}\n\nfn b() -> u32 {\n    todo!()\n}\n";
    let reply = read("```rust\nfn b() -> u32 {\n    1\n}\n\nfn a(&self) -> u32 {\n    2\n}\n```\n");
    let placed = place(
        &reply,
        &files("src/lib.rs", text),
        &["src/lib.rs".to_string()],
    )
    .expect("placed");
    let c = &placed[0].content;
    assert!(
        c.contains("    fn a(&self) -> u32 {\n        2\n    }"),
        "{c}"
    );
    assert!(c.contains("fn b() -> u32 {\n    1\n}"), "{c}");
    assert!(c.starts_with("use std::fmt;"));
    let tests = "fn f() -> u32 {\n    0\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n        assert_eq!(super::f(), 1);\n    }\n}\n";
    let reply = read(
        "```rust\nfn f() -> u32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n```\n",
    );
    let placed = place(
        &reply,
        &files("src/lib.rs", tests),
        &["src/lib.rs".to_string()],
    )
    .expect("placed");
    let c = &placed[0].content;
    assert!(
        c.contains("assert_eq!(super::f(), 1)"),
        "the tests stay: {c}"
    );
    assert!(c.contains("fn f() -> u32 {\n    1\n}"), "{c}");
}
