"""Ranking in a small, young repository (a new user's first one): a handful of files,
a few commits, most files committed together. A commit that changed most of the
files says nothing of which go together: the file that defines what the ticket
is about ranks first, not its co-change partners."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_hydrate import Ledger
from tests.conftest import commit_files, git

README = """# tinyparse

A tiny key=value parser. `parser.py` holds `parse`, which turns text into a dict.

    from parser import parse
    parse("a=1\\nb=2")
"""
PARSER = """def parse(text):
    result = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        result[key.strip()] = value.strip()
    return result
"""

COUNT_RS = """pub struct Counts {
    pub lines: usize,
    pub words: usize,
    pub bytes: usize,
}

pub fn count(text: &str) -> Counts {
    Counts {
        lines: text.matches('\\n').count(),
        words: text.split(' ').filter(|w| !w.is_empty()).count(),
        bytes: text.len(),
    }
}
"""
MAIN_RS = """use clap::Parser;
use std::fs;

mod count;

#[derive(Parser)]
struct Args {
    files: Vec<String>,
}

fn main() {
    let args = Args::parse();
    for file in &args.files {
        let text = fs::read_to_string(file).expect("cannot read file");
        let c = count::count(&text);
        println!("{} {} {} {}", c.lines, c.words, c.bytes, file);
    }
}
"""
CLI_TEST = """use std::process::Command;

#[test]
fn counts_a_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_wc-rs")).arg("Cargo.toml").output().unwrap();
    assert!(out.status.success());
}
"""
WC = {
    "Cargo.toml": '[package]\nname = "wc-rs"\nversion = "0.1.0"\n\n[dependencies]\nclap = "4"\n',
    "README.md": (
        "# wc-rs\n\n`wc` in Rust: counts lines, words and bytes of files.\n\n"
        "`src/count.rs` has `count`, which returns a `Counts` of lines, words and bytes;\n"
        "`src/main.rs` parses the arguments with clap and prints the counts.\n"
    ),
    ".gitignore": "/target\n",
    "src/main.rs": MAIN_RS,
    "src/count.rs": COUNT_RS,
}

STORAGE_RS = """use std::fs;

use crate::Item;

pub fn load(path: &str) -> Vec<Item> {
    match fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).unwrap(),
        Err(_) => Vec::new(),
    }
}

pub fn save(path: &str, items: &[Item]) {
    fs::write(path, serde_json::to_string_pretty(items).unwrap()).unwrap();
}
"""
STORAGE_TEST = """use todo_rs::{storage, Item};

#[test]
fn round_trip() {
    let dir = std::env::temp_dir().join("todo-rs-test.json");
    let path = dir.to_str().unwrap();
    storage::save(path, &[Item::new("a")]);
    assert_eq!(storage::load(path)[0].title, "a");
}
"""
CARGO_DEPENDENCIES = (
    '\n[dependencies]\nserde = { version = "1", features = ["derive"] }\nserde_json = "1"\n'
)
TODO_MAIN = """use std::env;

use todo_rs::{storage, Item};

fn main() {
    let args: Vec<String> = env::args().collect();
    let mut items = storage::load("todo.json");
    match args[1].as_str() {
        "add" => items.push(Item::new(&args[2])),
        "list" => {
            for (i, item) in items.iter().enumerate() {
                println!("{} {} {}", i + 1, if item.done { "x" } else { " " }, item.title);
            }
        }
        _ => eprintln!("unknown command"),
    }
    storage::save("todo.json", &items);
}
"""
TODO_LIB = """use serde::{Deserialize, Serialize};

pub mod storage;

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Item {
    pub title: String,
    pub done: bool,
}

impl Item {
    pub fn new(title: &str) -> Self {
        Item { title: title.to_string(), done: false }
    }
}
"""
TODO = {
    "Cargo.toml": '[package]\nname = "todo-rs"\nversion = "0.1.0"\nedition = "2021"\n',
    "README.md": (
        "# todo-rs\n\nA todo list in Rust, saved as JSON.\n\nThe list is a `Vec<Item>` in"
        " `src/lib.rs`; `src/storage.rs` loads and saves it\n(`load`, `save`) in `todo.json`.\n"
    ),
    ".gitignore": "/target\n",
    "src/main.rs": TODO_MAIN,
    "src/lib.rs": TODO_LIB,
}


def _first_file(repo: Path, title: str, objective: str) -> list[tuple[str, str]]:
    """add-tree's order for a task (path, reason), in packing order."""
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", objective=objective, acceptance="the tests pass", title=title)
        ledger.add_tree("T-1")
        return [(e["source"], e["reason"]) for e in ledger.context_entries("T-1")]


@pytest.fixture
def young(tmp_path: Path) -> Path:
    """An empty repository (no commit yet)."""
    path = tmp_path / "young"
    git(tmp_path, "init", "-q", str(path))
    return path


def test_two_files_committed_together_do_not_co_change(young: Path) -> None:
    """The README quick start's repository: one commit of both files. The file that
    defines parse ranks first, not the README it "changed together" with."""
    commit_files(young, {"README.md": README, "parser.py": PARSER}, "Initial commit")
    order = _first_file(
        young,
        "parse() keeps blank keys",
        "parse() returns an entry with an empty key for lines without '='; skip such lines",
    )
    assert order[0] == ("parser.py", "defines parse")
    assert order[1][0] == "README.md" and "co-change" not in order[1][1]


def test_a_first_commit_of_every_file_is_a_sweep(young: Path) -> None:
    """A later commit touches two of the five files; the first, which added all of
    them, makes no file a partner of the one the ticket is about."""
    commit_files(young, WC, "Initial commit")
    commit_files(young, {"src/main.rs": MAIN_RS + "// tidy\n", "tests/cli.rs": CLI_TEST}, "tests")
    order = _first_file(
        young,
        "Words separated by tabs or newlines are counted as one",
        "count splits on spaces only: 'a\\tb' counts one word; split on any whitespace",
    )
    assert order[0][0] == "src/count.rs"
    assert not any("co-change with src/count.rs" in reason for _path, reason in order)


def _todo_history(young: Path) -> None:
    """todo-rs: three commits; the first two change most of the files (sweeps), the
    third the storage module and its test."""
    commit_files(young, TODO, "Initial commit")
    commit_files(
        young,
        {
            "src/storage.rs": STORAGE_RS,
            "src/lib.rs": TODO["src/lib.rs"] + "// json\n",
            "src/main.rs": TODO_MAIN + "// json\n",
            "Cargo.toml": TODO["Cargo.toml"] + CARGO_DEPENDENCIES,
        },
        "Save the list as JSON",
    )
    commit_files(
        young,
        {"tests/storage.rs": STORAGE_TEST, "src/storage.rs": STORAGE_RS + "// tidy\n"},
        "Test storage",
    )


def test_the_first_commits_of_most_files_are_sweeps(young: Path) -> None:
    """The ticket's words are the program's: it ranks first, not the files the first
    commits changed with it."""
    _todo_history(young)
    order = _first_file(
        young,
        "Add a done command",
        "There is no way to mark an item done; add 'todo-rs done N' which sets done on"
        " the Nth item",
    )
    assert order[0][0] == "src/main.rs", order


def test_a_few_commits_say_little_about_partners(young: Path) -> None:
    """The same repository: the one commit that is no sweep changed the storage
    module with its test. One commit is too little evidence to rank the test (by
    co-change with the module) above the module the ticket's words describe."""
    _todo_history(young)
    order = _first_file(
        young,
        "A corrupt todo.json panics",
        "load unwraps the serde_json error and panics when todo.json is not valid JSON;"
        " report it and keep the file",
    )
    assert order[0][0] == "src/storage.rs", order


KV_README = """# kv

A file-backed key-value store for small Go programs.

```go
db, err := kv.Open("data.kv")
db.Set("name", "sam")
v, ok := db.Get("name")
```

`Open` loads the file, `Set` appends a line and `Get` reads from memory. The `cmd/kv`
tool wraps it for the shell.
"""
KV_GO = """package kv

import (
\t"bufio"
\t"fmt"
\t"os"
\t"strings"
)

// DB is a key-value store backed by a file of key=value lines.
type DB struct {
\tpath string
\tdata map[string]string
}

// Open loads the store at path, creating it if needed.
func Open(path string) (*DB, error) {
\tdb := &DB{path: path, data: map[string]string{}}
\tf, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
\tif err != nil {
\t\treturn nil, err
\t}
\tdefer f.Close()
\tscanner := bufio.NewScanner(f)
\tfor scanner.Scan() {
\t\tkey, value, _ := strings.Cut(scanner.Text(), "=")
\t\tdb.data[key] = value
\t}
\treturn db, scanner.Err()
}

// Get returns the value of key.
func (db *DB) Get(key string) (string, bool) {
\tv, ok := db.data[key]
\treturn v, ok
}

// Set stores value under key and appends it to the file.
func (db *DB) Set(key, value string) error {
\tdb.data[key] = value
\tf, err := os.OpenFile(db.path, os.O_APPEND|os.O_WRONLY, 0o644)
\tif err != nil {
\t\treturn err
\t}
\tdefer f.Close()
\t_, err = fmt.Fprintf(f, "%s=%s\\n", key, value)
\treturn err
}
"""
KV_TEST = """package kv

import (
\t"path/filepath"
\t"testing"
)

func TestSetGet(t *testing.T) {
\tdb, err := Open(filepath.Join(t.TempDir(), "t.kv"))
\tif err != nil {
\t\tt.Fatal(err)
\t}
\tdb.Set("a", "1")
\tif v, _ := db.Get("a"); v != "1" {
\t\tt.Fatal(v)
\t}
}
"""
KV_MAIN = """package main

import (
\t"fmt"
\t"os"

\t"github.com/sam/kv"
)

func main() {
\tdb, err := kv.Open("data.kv")
\tif err != nil {
\t\tfmt.Fprintln(os.Stderr, err)
\t\tos.Exit(1)
\t}
\tswitch os.Args[1] {
\tcase "get":
\t\tv, _ := db.Get(os.Args[2])
\t\tfmt.Println(v)
\tcase "set":
\t\tdb.Set(os.Args[2], os.Args[3])
\t}
}
"""
KV = {
    "go.mod": "module github.com/sam/kv\n\ngo 1.22\n",
    "README.md": KV_README,
    "LICENSE": "MIT License\n\nPermission is granted, free of charge, without restriction.\n",
    "kv.go": KV_GO,
    "kv_test.go": KV_TEST,
    "cmd/kv/main.go": KV_MAIN,
}


def test_a_small_repository_s_readme_weighs_as_a_changelog(young: Path) -> None:
    """One commit of six files: the README describes each of them, so it holds the
    ticket's words ('key', 'memory', 'file') as a changelog holds every change's. It
    weighs as one: the file that defines DB ranks first."""
    commit_files(young, KV, "Initial commit")
    order = _first_file(
        young,
        "Add a Delete method",
        "There is no way to remove a key; add DB.Delete that removes it from memory and"
        " records the removal in the file",
    )
    assert order[0][0] == "kv.go", order
