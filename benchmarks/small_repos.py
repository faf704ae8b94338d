# ruff: noqa: E501 (the repositories' files and tickets are held verbatim, long lines too)
"""Ranking in small, young repositories: where the file a developer opens first lands.

Builds 13 small repositories that look like first projects (2-10 files, 1-6 commits,
most files committed together; Python, JavaScript, Go, Rust; a README, a configuration
file, tests), each with two or three tickets whose right file is clear, then runs
``task-add``, ``add-tree`` and ``show --json`` for every ticket with the code of a
checkout and prints each ticket's place of its right file: how many are first, in the
first three, and the mean reciprocal rank (``benchmarks/RESULTS.md``, "Ranking in
small, young repositories").

Usage::

    python benchmarks/small_repos.py --code . --out /tmp/small-this.json
    python benchmarks/small_repos.py --code /tmp/main-archive --out /tmp/small-main.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

GITIGNORE = "__pycache__/\n*.pyc\n.venv/\ndist/\n"
NODE_IGNORE = "node_modules/\ndist/\n.env\n"
MIT = "MIT License\n\nCopyright (c) 2026 Sam Doe\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\nof this software, to deal in the Software without restriction.\n"

SPECS = []

# 1. the README quick start's case: two files, one commit
SPECS.append(
    (
        "tinyparse",
        {
            "README.md": """# tinyparse

A tiny key=value parser. `parser.py` holds `parse`, which turns text into a dict.

    from parser import parse
    parse("a=1\\nb=2")
""",
            "parser.py": """def parse(text):
    result = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        result[key.strip()] = value.strip()
    return result
""",
        },
        [("Initial commit", ["README.md", "parser.py"])],
        [
            (
                "P1",
                "parse() keeps blank keys",
                "parse() returns an entry with an empty key for lines without '='; it should skip such lines",
                "parser.py",
            ),
            (
                "P2",
                "Values with '=' inside are cut",
                "parse('url=a=b') should keep the whole value after the first '=' sign",
                "parser.py",
            ),
        ],
    )
)

# 2. a Python CLI, three commits
SPECS.append(
    (
        "todo-cli",
        {
            "README.md": """# todo

A small command-line todo list.

    pip install -e .
    todo add "buy milk"
    todo list
    todo done 1

Tasks are kept in `~/.todo.json` by the store (`todo/store.py`): `load_tasks` reads the
file and `save_tasks` writes it. The command line (`todo/cli.py`) has the `add`, `list` and
`done` commands. Run the tests with `pytest`.
""",
            "pyproject.toml": """[project]
name = "todo"
version = "0.1.0"
requires-python = ">=3.9"
dependencies = ["click>=8"]

[project.scripts]
todo = "todo.cli:main"

[tool.pytest.ini_options]
testpaths = ["tests"]
""",
            ".gitignore": GITIGNORE,
            "todo/__init__.py": '__version__ = "0.1.0"\n',
            "todo/store.py": '''"""Where the tasks live: a JSON file in the home directory."""
import json
import os

PATH = os.path.expanduser("~/.todo.json")


def load_tasks(path=PATH):
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return json.load(fh)


def save_tasks(tasks, path=PATH):
    with open(path, "w") as fh:
        json.dump(tasks, fh, indent=2)
''',
            "todo/cli.py": '''import click

from .store import load_tasks, save_tasks


@click.group()
def main():
    """A small todo list."""


@main.command()
@click.argument("title")
def add(title):
    tasks = load_tasks()
    tasks.append({"title": title, "done": False})
    save_tasks(tasks)


@main.command(name="list")
def list_tasks():
    for number, task in enumerate(load_tasks(), 1):
        mark = "x" if task["done"] else " "
        click.echo(f"{number}. [{mark}] {task['title']}")


@main.command()
@click.argument("number", type=int)
def done(number):
    tasks = load_tasks()
    tasks[number - 1]["done"] = True
    save_tasks(tasks)
''',
            "tests/test_store.py": """from todo.store import load_tasks, save_tasks


def test_round_trip(tmp_path):
    path = tmp_path / "t.json"
    save_tasks([{"title": "a", "done": False}], path)
    assert load_tasks(path) == [{"title": "a", "done": False}]


def test_missing_file(tmp_path):
    assert load_tasks(tmp_path / "none.json") == []
""",
            "tests/test_cli.py": """from click.testing import CliRunner

from todo.cli import main


def test_add_and_list(tmp_path, monkeypatch):
    monkeypatch.setattr("todo.store.PATH", str(tmp_path / "t.json"))
    runner = CliRunner()
    runner.invoke(main, ["add", "milk"])
    result = runner.invoke(main, ["list"])
    assert "milk" in result.output
""",
        },
        [
            (
                "Initial commit",
                [
                    "README.md",
                    "pyproject.toml",
                    ".gitignore",
                    "todo/__init__.py",
                    "todo/store.py",
                    "todo/cli.py",
                    "tests/test_store.py",
                    "tests/test_cli.py",
                ],
            ),
            ("Add done command", ["todo/cli.py", "tests/test_cli.py", "README.md"]),
            ("Write the file with an indent", ["todo/store.py", "tests/test_store.py"]),
        ],
        [
            (
                "T1",
                "Titles with accents are garbled",
                "Saving a task whose title has accents writes escaped or garbled text to the JSON file; save_tasks should write UTF-8",
                "todo/store.py",
            ),
            (
                "T2",
                "todo done with a wrong number crashes",
                "`todo done 9` with three tasks raises an IndexError traceback; it should print an error and exit 1",
                "todo/cli.py",
            ),
            (
                "T3",
                "A corrupt todo file gives a traceback",
                "When ~/.todo.json holds invalid JSON, load_tasks raises JSONDecodeError; it should say which file is broken",
                "todo/store.py",
            ),
        ],
    )
)

# 3. JavaScript, two commits
SPECS.append(
    (
        "weather-js",
        {
            "package.json": """{
  "name": "weather-cli",
  "version": "1.0.0",
  "description": "Current weather for a city in your terminal",
  "main": "index.js",
  "bin": { "weather": "index.js" },
  "scripts": { "test": "node --test test/", "lint": "eslint ." },
  "dependencies": { "node-fetch": "^3.3.2" },
  "devDependencies": { "eslint": "^8.57.0" }
}
""",
            "README.md": """# weather-cli

Prints the current weather for a city.

    npm install -g .
    weather Berlin

`src/api.js` fetches the forecast from the Open-Meteo API (`fetchWeather`) and
`src/format.js` turns it into a line of text (`formatWeather`, with the temperature
and the wind speed). Tests: `npm test`.
""",
            ".eslintrc.json": '{\n  "env": { "node": true, "es2022": true },\n  "extends": "eslint:recommended"\n}\n',
            ".gitignore": NODE_IGNORE,
            "index.js": """#!/usr/bin/env node
const { fetchWeather } = require('./src/api');
const { formatWeather } = require('./src/format');

async function main() {
  const city = process.argv[2];
  if (!city) {
    console.error('usage: weather CITY');
    process.exit(1);
  }
  const weather = await fetchWeather(city);
  console.log(formatWeather(city, weather));
}

main();
""",
            "src/api.js": """const GEO = 'https://geocoding-api.open-meteo.com/v1/search?name=';
const FORECAST = 'https://api.open-meteo.com/v1/forecast';

async function fetchWeather(city) {
  const geo = await fetch(GEO + city).then((r) => r.json());
  const place = geo.results[0];
  const url = `${FORECAST}?latitude=${place.latitude}&longitude=${place.longitude}&current_weather=true`;
  const data = await fetch(url).then((r) => r.json());
  return data.current_weather;
}

module.exports = { fetchWeather };
""",
            "src/format.js": """function formatWeather(city, weather) {
  const temperature = weather.temperature;
  const wind = weather.windspeed;
  return `${city}: ${temperature} degrees, wind ${wind} km/h`;
}

function round(value) {
  return Math.round(value * 10) / 10;
}

module.exports = { formatWeather, round };
""",
            "test/format.test.js": """const test = require('node:test');
const assert = require('node:assert');
const { formatWeather } = require('../src/format');

test('formats a line', () => {
  const line = formatWeather('Oslo', { temperature: 3, windspeed: 10 });
  assert.strictEqual(line, 'Oslo: 3 degrees, wind 10 km/h');
});
""",
        },
        [
            (
                "first version",
                [
                    "package.json",
                    "README.md",
                    ".gitignore",
                    "index.js",
                    "src/api.js",
                    "src/format.js",
                ],
            ),
            ("add tests and eslint", ["test/format.test.js", ".eslintrc.json", "package.json"]),
        ],
        [
            (
                "W1",
                "City names with spaces fail",
                "weather 'New York' throws: the geocoding request is sent with a raw space in the URL; encode the city name",
                "src/api.js",
            ),
            (
                "W2",
                "Show the unit of the temperature",
                "formatWeather prints '3 degrees'; it should print '3 °C' and round the temperature to one decimal",
                "src/format.js",
            ),
            (
                "W3",
                "Unknown city crashes with TypeError",
                "fetchWeather reads geo.results[0] when the geocoding API finds nothing and crashes; throw a clear 'city not found' error",
                "src/api.js",
            ),
        ],
    )
)

# 4. Go, four commits
SPECS.append(
    (
        "shorturl-go",
        {
            "go.mod": "module github.com/sam/shorturl\n\ngo 1.22\n",
            "README.md": """# shorturl

A tiny URL shortener. `POST /shorten` with a `url` form value returns a short code; `GET
/{code}` redirects to the long URL. The handlers are in `handler.go`, the in-memory store
(`Store`, with `Save` and `Lookup`) in `store.go`.

    go run .
    curl -d url=https://example.com localhost:8080/shorten
""",
            "Makefile": "build:\n\tgo build -o shorturl .\n\ntest:\n\tgo test ./...\n",
            ".github/workflows/ci.yml": "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - uses: actions/setup-go@v5\n      - run: go test ./...\n",
            "main.go": """package main

import (
\t"log"
\t"net/http"
)

func main() {
\tstore := NewStore()
\thttp.HandleFunc("/shorten", shortenHandler(store))
\thttp.HandleFunc("/", redirectHandler(store))
\tlog.Fatal(http.ListenAndServe(":8080", nil))
}
""",
            "store.go": """package main

import (
\t"math/rand"
\t"sync"
)

const letters = "abcdefghijklmnopqrstuvwxyz0123456789"

// Store keeps short codes in memory.
type Store struct {
\tmu    sync.Mutex
\turls  map[string]string
}

func NewStore() *Store { return &Store{urls: map[string]string{}} }

func newCode() string {
\tb := make([]byte, 6)
\tfor i := range b {
\t\tb[i] = letters[rand.Intn(len(letters))]
\t}
\treturn string(b)
}

// Save stores a URL and returns its code.
func (s *Store) Save(url string) string {
\ts.mu.Lock()
\tdefer s.mu.Unlock()
\tcode := newCode()
\ts.urls[code] = url
\treturn code
}

// Lookup returns the URL of a code.
func (s *Store) Lookup(code string) (string, bool) {
\ts.mu.Lock()
\tdefer s.mu.Unlock()
\turl, ok := s.urls[code]
\treturn url, ok
}
""",
            "store_test.go": """package main

import "testing"

func TestSaveLookup(t *testing.T) {
\ts := NewStore()
\tcode := s.Save("https://example.com")
\tif url, ok := s.Lookup(code); !ok || url != "https://example.com" {
\t\tt.Fatalf("got %q %v", url, ok)
\t}
}
""",
            "handler.go": """package main

import (
\t"fmt"
\t"net/http"
)

func shortenHandler(s *Store) http.HandlerFunc {
\treturn func(w http.ResponseWriter, r *http.Request) {
\t\turl := r.FormValue("url")
\t\tcode := s.Save(url)
\t\tfmt.Fprintf(w, "%s\\n", code)
\t}
}

func redirectHandler(s *Store) http.HandlerFunc {
\treturn func(w http.ResponseWriter, r *http.Request) {
\t\turl, _ := s.Lookup(r.URL.Path[1:])
\t\thttp.Redirect(w, r, url, http.StatusFound)
\t}
}
""",
            "handler_test.go": """package main

import (
\t"net/http/httptest"
\t"strings"
\t"testing"
)

func TestShorten(t *testing.T) {
\ts := NewStore()
\treq := httptest.NewRequest("POST", "/shorten", strings.NewReader("url=https://a.b"))
\treq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
\trec := httptest.NewRecorder()
\tshortenHandler(s)(rec, req)
\tif rec.Code != 200 {
\t\tt.Fatal(rec.Code)
\t}
}
""",
        },
        [
            ("initial commit", ["go.mod", "README.md", "main.go", "store.go", "handler.go"]),
            ("add tests", ["store_test.go", "handler_test.go", "Makefile"]),
            ("add CI", [".github/workflows/ci.yml"]),
            ("use a mutex in the store", ["store.go", "store_test.go"]),
        ],
        [
            (
                "S1",
                "Unknown code redirects to an empty URL",
                "GET /nope for a code that was never saved redirects to '' instead of answering 404 Not Found",
                "handler.go",
            ),
            (
                "S2",
                "Short codes can collide",
                "newCode picks random letters without checking the map; Save can overwrite an existing code. Retry until the code is unused",
                "store.go",
            ),
            (
                "S3",
                "Reject URLs that are not http or https",
                "POST /shorten accepts any string, even empty; answer 400 Bad Request unless the url form value is an http(s) URL",
                "handler.go",
            ),
        ],
    )
)

# 5. Rust, two commits
SPECS.append(
    (
        "wc-rs",
        {
            "Cargo.toml": '[package]\nname = "wc-rs"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nclap = { version = "4", features = ["derive"] }\n',
            "README.md": """# wc-rs

`wc` in Rust: counts lines, words and bytes of files or standard input.

    cargo run -- README.md

`src/count.rs` has `count`, which returns a `Counts` of lines, words and bytes; `src/main.rs`
parses the arguments with clap and prints the counts.
""",
            ".gitignore": "/target\n",
            "src/main.rs": """use clap::Parser;
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
""",
            "src/count.rs": """pub struct Counts {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words() {
        assert_eq!(count("a b c\\n").words, 3);
    }
}
""",
            "tests/cli.rs": """use std::process::Command;

#[test]
fn counts_a_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_wc-rs")).arg("Cargo.toml").output().unwrap();
    assert!(out.status.success());
}
""",
        },
        [
            (
                "Initial commit",
                ["Cargo.toml", "README.md", ".gitignore", "src/main.rs", "src/count.rs"],
            ),
            ("Add an integration test", ["tests/cli.rs", "src/main.rs"]),
        ],
        [
            (
                "R1",
                "Words separated by tabs or newlines are counted as one",
                "count splits on spaces only: 'a\\tb' and 'a\\nb' count one word; split on any whitespace",
                "src/count.rs",
            ),
            (
                "R2",
                "Read standard input when no file is given",
                "With no FILE argument the program prints nothing; like wc it should count standard input",
                "src/main.rs",
            ),
            (
                "R3",
                "A missing file panics",
                "wc-rs nosuchfile panics with 'cannot read file'; print 'wc-rs: nosuchfile: No such file' and go on with the other files",
                "src/main.rs",
            ),
        ],
    )
)

# 6. Flask app, five commits
SPECS.append(
    (
        "notes-flask",
        {
            "README.md": """# notes

A small notes app in Flask with SQLite.

    pip install -r requirements.txt
    flask --app app run

Routes are in `app.py` (list, create and delete notes); `models.py` holds the `Note` model
and the database helpers (`init_db`, `get_db`). Settings are read from `config.py`.
""",
            "requirements.txt": "flask==3.0.3\npytest==8.2.0\n",
            ".gitignore": GITIGNORE + "instance/\n*.sqlite\n",
            "config.py": 'import os\n\nDATABASE = os.environ.get("NOTES_DB", "notes.sqlite")\nSECRET_KEY = os.environ.get("SECRET_KEY", "dev")\n',
            "app.py": """from flask import Flask, redirect, render_template, request, url_for

from models import Note, get_db, init_db

app = Flask(__name__)
app.config.from_object("config")


@app.route("/")
def index():
    notes = Note.all(get_db())
    return render_template("index.html", notes=notes)


@app.route("/notes", methods=["POST"])
def create_note():
    Note.create(get_db(), request.form["text"])
    return redirect(url_for("index"))


@app.route("/notes/<int:note_id>/delete", methods=["GET"])
def delete_note(note_id):
    Note.delete(get_db(), note_id)
    return redirect(url_for("index"))


with app.app_context():
    init_db()
""",
            "models.py": """import sqlite3
from datetime import datetime

from flask import current_app, g


def get_db():
    if "db" not in g:
        g.db = sqlite3.connect(current_app.config["DATABASE"])
        g.db.row_factory = sqlite3.Row
    return g.db


def init_db():
    get_db().execute(
        "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT, created TEXT)"
    )


class Note:
    @staticmethod
    def all(db):
        return db.execute("SELECT * FROM notes ORDER BY created DESC").fetchall()

    @staticmethod
    def create(db, text):
        db.execute(
            "INSERT INTO notes (text, created) VALUES (?, ?)", (text, datetime.now().isoformat())
        )
        db.commit()

    @staticmethod
    def delete(db, note_id):
        db.execute("DELETE FROM notes WHERE id = ?", (note_id,))
        db.commit()
""",
            "templates/index.html": """<!doctype html>
<title>Notes</title>
<form method="post" action="/notes"><textarea name="text"></textarea><button>Add</button></form>
<ul>
{% for note in notes %}
  <li>{{ note.text }} <small>{{ note.created }}</small>
      <a href="/notes/{{ note.id }}/delete">delete</a></li>
{% endfor %}
</ul>
""",
            "tests/test_app.py": """import pytest

from app import app


@pytest.fixture
def client(tmp_path):
    app.config["DATABASE"] = str(tmp_path / "t.sqlite")
    with app.test_client() as client:
        yield client


def test_index(client):
    assert client.get("/").status_code == 200
""",
        },
        [
            (
                "Initial commit",
                [
                    "README.md",
                    "requirements.txt",
                    ".gitignore",
                    "app.py",
                    "models.py",
                    "templates/index.html",
                ],
            ),
            ("Add config.py", ["config.py", "app.py", "README.md"]),
            ("Add a test", ["tests/test_app.py", "requirements.txt"]),
            ("Show when a note was written", ["models.py", "templates/index.html", "app.py"]),
            ("Order notes newest first", ["models.py"]),
        ],
        [
            (
                "N1",
                "Deleting a note should be a POST",
                "delete_note answers GET, so a crawler following links deletes notes; accept only POST and use a form button",
                "app.py",
            ),
            (
                "N2",
                "Note timestamps are in local time",
                "Note.create stores datetime.now() without a time zone; store UTC so the created column sorts the same on every server",
                "models.py",
            ),
            (
                "N3",
                "Empty notes can be saved",
                "Submitting the form with empty text creates an empty note; create_note should refuse it with 400",
                "app.py",
            ),
        ],
    )
)

# 7. a Python library, one commit, everything at once
SPECS.append(
    (
        "csv2json",
        {
            "README.md": """# csv2json

Convert CSV files to JSON.

    pip install csv2json
    csv2json data.csv > data.json

Use it from Python too:

    from csv2json import convert
    convert(open("data.csv"))

`convert` reads the rows with `csv.DictReader` and returns a list of dicts; `cli.py` is the
command line (`--indent`, `--delimiter`). Licensed MIT.
""",
            "setup.cfg": "[metadata]\nname = csv2json\nversion = 0.1.0\nlicense = MIT\n\n[options]\npy_modules = csv2json, cli\n\n[options.entry_points]\nconsole_scripts =\n    csv2json = cli:main\n",
            "LICENSE": MIT,
            ".gitignore": GITIGNORE,
            "csv2json.py": '''"""CSV to JSON."""
import csv


def convert(stream, delimiter=","):
    """The rows of a CSV stream as a list of dicts."""
    reader = csv.DictReader(stream, delimiter=delimiter)
    return [dict(row) for row in reader]
''',
            "cli.py": """import argparse
import json
import sys

from csv2json import convert


def main(argv=None):
    parser = argparse.ArgumentParser(prog="csv2json")
    parser.add_argument("file")
    parser.add_argument("--indent", type=int, default=2)
    parser.add_argument("--delimiter", default=",")
    args = parser.parse_args(argv)
    with open(args.file) as fh:
        rows = convert(fh, args.delimiter)
    json.dump(rows, sys.stdout, indent=args.indent)


if __name__ == "__main__":
    main()
""",
            "test_csv2json.py": """import io

from csv2json import convert


def test_convert():
    assert convert(io.StringIO("a,b\\n1,2\\n")) == [{"a": "1", "b": "2"}]
""",
        },
        [
            (
                "Initial commit",
                [
                    "README.md",
                    "setup.cfg",
                    "LICENSE",
                    ".gitignore",
                    "csv2json.py",
                    "cli.py",
                    "test_csv2json.py",
                ],
            )
        ],
        [
            (
                "C1",
                "Numbers come out as strings",
                "convert returns every value as a string ('1'); convert numeric cells to int or float",
                "csv2json.py",
            ),
            (
                "C2",
                "Read from stdin when the file is '-'",
                "csv2json - < data.csv fails with FileNotFoundError; treat '-' as standard input in the command line",
                "cli.py",
            ),
            (
                "C3",
                "A BOM in the header breaks the first key",
                "Files saved by Excel start with a byte order mark, so the first key is '\\ufeffname'; open the file with utf-8-sig",
                "cli.py",
            ),
        ],
    )
)

# 8. React app, three commits
SPECS.append(
    (
        "counter-react",
        {
            "package.json": """{
  "name": "counter",
  "private": true,
  "version": "0.0.1",
  "type": "module",
  "scripts": { "dev": "vite", "build": "vite build", "test": "vitest" },
  "dependencies": { "react": "^18.3.1", "react-dom": "^18.3.1" },
  "devDependencies": { "@vitejs/plugin-react": "^4.3.0", "vite": "^5.2.0", "vitest": "^1.6.0", "@testing-library/react": "^15.0.7" }
}
""",
            "README.md": """# counter

A React counter made with Vite, to learn hooks.

    npm install
    npm run dev

`src/Counter.jsx` shows the count and the buttons; the state lives in the `useCounter`
hook (`src/useCounter.js`: `increment`, `decrement`, `reset`).
""",
            "vite.config.js": "import { defineConfig } from 'vite';\nimport react from '@vitejs/plugin-react';\n\nexport default defineConfig({ plugins: [react()], test: { environment: 'jsdom' } });\n",
            "index.html": '<!doctype html>\n<html>\n  <body>\n    <div id="root"></div>\n    <script type="module" src="/src/main.jsx"></script>\n  </body>\n</html>\n',
            ".gitignore": NODE_IGNORE,
            "src/main.jsx": "import React from 'react';\nimport { createRoot } from 'react-dom/client';\nimport App from './App';\n\ncreateRoot(document.getElementById('root')).render(<App />);\n",
            "src/App.jsx": "import Counter from './Counter';\n\nexport default function App() {\n  return (\n    <main>\n      <h1>Counter</h1>\n      <Counter initial={0} step={1} />\n    </main>\n  );\n}\n",
            "src/Counter.jsx": """import { useCounter } from './useCounter';

export default function Counter({ initial, step }) {
  const { count, increment, decrement, reset } = useCounter(initial, step);
  return (
    <div>
      <p>{count}</p>
      <button onClick={decrement}>-</button>
      <button onClick={increment}>+</button>
      <button onClick={reset}>reset</button>
    </div>
  );
}
""",
            "src/useCounter.js": """import { useState } from 'react';

export function useCounter(initial = 0, step = 1) {
  const [count, setCount] = useState(initial);
  const increment = () => setCount(count + step);
  const decrement = () => setCount(count - step);
  const reset = () => setCount(0);
  return { count, increment, decrement, reset };
}
""",
            "src/Counter.test.jsx": """import { render, screen, fireEvent } from '@testing-library/react';
import { test, expect } from 'vitest';
import Counter from './Counter';

test('increments', () => {
  render(<Counter initial={0} step={1} />);
  fireEvent.click(screen.getByText('+'));
  expect(screen.getByText('1')).toBeTruthy();
});
""",
        },
        [
            (
                "init vite react app",
                [
                    "package.json",
                    "README.md",
                    "vite.config.js",
                    "index.html",
                    ".gitignore",
                    "src/main.jsx",
                    "src/App.jsx",
                    "src/Counter.jsx",
                    "src/useCounter.js",
                ],
            ),
            ("add vitest", ["src/Counter.test.jsx", "package.json", "vite.config.js"]),
            ("move state into a hook", ["src/useCounter.js", "src/Counter.jsx", "README.md"]),
        ],
        [
            (
                "K1",
                "Reset goes to zero, not to the initial value",
                "With initial={5}, pressing reset shows 0; reset in the hook should go back to the initial value",
                "src/useCounter.js",
            ),
            (
                "K2",
                "Fast clicks lose increments",
                "Clicking + twice quickly adds only one: increment uses the stale count; use the functional update form of setCount",
                "src/useCounter.js",
            ),
            (
                "K3",
                "The count should not go below zero",
                "Disable the minus button when the count is 0 so the counter never shows a negative number",
                "src/Counter.jsx",
            ),
        ],
    )
)

# 9. static blog generator, six commits
SPECS.append(
    (
        "blog-gen",
        {
            "README.md": """# blog-gen

My static blog generator. Posts are Markdown files in `posts/` with a front matter block;
`build.py` reads them and writes HTML to `site/` using the templates.

    pip install -r requirements.txt
    python build.py

`render.py` does the work: `parse_front_matter` splits the header from the body and
`render_post` fills `templates/post.html`. Settings (title, base URL) are in `config.yaml`.
""",
            "requirements.txt": "markdown==3.6\nPyYAML==6.0.1\njinja2==3.1.4\n",
            "config.yaml": "title: My blog\nbase_url: https://example.org/\nposts_dir: posts\noutput_dir: site\n",
            ".gitignore": GITIGNORE + "site/\n",
            "build.py": """import os

import yaml

from render import render_index, render_post


def build(config_path="config.yaml"):
    with open(config_path) as fh:
        config = yaml.safe_load(fh)
    os.makedirs(config["output_dir"], exist_ok=True)
    posts = []
    for name in sorted(os.listdir(config["posts_dir"])):
        if name.endswith(".md"):
            posts.append(render_post(os.path.join(config["posts_dir"], name), config))
    render_index(posts, config)


if __name__ == "__main__":
    build()
""",
            "render.py": '''import os

import markdown
from jinja2 import Environment, FileSystemLoader

env = Environment(loader=FileSystemLoader("templates"))


def parse_front_matter(text):
    """Split '---' front matter (key: value lines) from the body."""
    meta = {}
    if text.startswith("---"):
        header, _, text = text[3:].partition("---")
        for line in header.strip().splitlines():
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
    return meta, text


def render_post(path, config):
    with open(path) as fh:
        meta, body = parse_front_matter(fh.read())
    html = markdown.markdown(body)
    slug = os.path.splitext(os.path.basename(path))[0]
    page = env.get_template("post.html").render(meta=meta, body=html, config=config)
    with open(os.path.join(config["output_dir"], slug + ".html"), "w") as fh:
        fh.write(page)
    return {"slug": slug, **meta}


def render_index(posts, config):
    page = env.get_template("index.html").render(posts=posts, config=config)
    with open(os.path.join(config["output_dir"], "index.html"), "w") as fh:
        fh.write(page)
''',
            "templates/post.html": "<!doctype html>\n<title>{{ meta.title }} - {{ config.title }}</title>\n<article>\n<h1>{{ meta.title }}</h1>\n<time>{{ meta.date }}</time>\n{{ body }}\n</article>\n",
            "templates/index.html": '<!doctype html>\n<title>{{ config.title }}</title>\n<ul>\n{% for post in posts %}<li><a href="{{ post.slug }}.html">{{ post.title }}</a></li>{% endfor %}\n</ul>\n',
            "posts/hello.md": "---\ntitle: Hello world\ndate: 2026-01-02\n---\n\nMy first post, written in Markdown.\n",
            "tests/test_render.py": """from render import parse_front_matter


def test_front_matter():
    meta, body = parse_front_matter("---\\ntitle: A\\n---\\nbody")
    assert meta == {"title": "A"}
    assert body == "\\nbody"
""",
        },
        [
            (
                "first commit",
                [
                    "README.md",
                    "requirements.txt",
                    "build.py",
                    "render.py",
                    "templates/post.html",
                    "posts/hello.md",
                ],
            ),
            ("add index page", ["render.py", "build.py", "templates/index.html"]),
            ("config file", ["config.yaml", "build.py", "render.py", "README.md"]),
            ("gitignore", [".gitignore"]),
            ("test front matter", ["tests/test_render.py", "render.py"]),
            ("fix date in template", ["templates/post.html"]),
        ],
        [
            (
                "B1",
                "Front matter values with a colon are cut",
                "A post with 'title: Hello: world' gets the title 'Hello'; parse_front_matter should split on the first colon only and keep the rest",
                "render.py",
            ),
            (
                "B2",
                "The index lists posts oldest first",
                "The index page should list posts by date, newest first, not by file name",
                "build.py",
            ),
            (
                "B3",
                "Draft posts are published",
                "Posts whose front matter says 'draft: true' should be skipped when building the site",
                "build.py",
            ),
        ],
    )
)

# 10. Discord bot, two commits
SPECS.append(
    (
        "dice-bot",
        {
            "package.json": '{\n  "name": "dice-bot",\n  "version": "0.1.0",\n  "main": "index.js",\n  "scripts": { "start": "node index.js" },\n  "dependencies": { "discord.js": "^14.15.0", "dotenv": "^16.4.5" }\n}\n',
            "README.md": """# dice-bot

A Discord bot that rolls dice. Copy `.env.example` to `.env` and set `DISCORD_TOKEN`.

    npm install
    npm start

Commands live in `commands/`: `/ping` answers pong, `/roll 2d6` rolls dice (the dice
notation is parsed by `parseDice` in `commands/roll.js`). `index.js` loads the commands
and logs in.
""",
            ".env.example": "DISCORD_TOKEN=\nCLIENT_ID=\n",
            ".gitignore": NODE_IGNORE,
            "index.js": """require('dotenv').config();
const fs = require('node:fs');
const path = require('node:path');
const { Client, Collection, GatewayIntentBits } = require('discord.js');

const client = new Client({ intents: [GatewayIntentBits.Guilds] });
client.commands = new Collection();

for (const file of fs.readdirSync(path.join(__dirname, 'commands'))) {
  const command = require(`./commands/${file}`);
  client.commands.set(command.data.name, command);
}

client.on('interactionCreate', async (interaction) => {
  if (!interaction.isChatInputCommand()) return;
  const command = client.commands.get(interaction.commandName);
  await command.execute(interaction);
});

client.login(process.env.DISCORD_TOKEN);
""",
            "commands/ping.js": "const { SlashCommandBuilder } = require('discord.js');\n\nmodule.exports = {\n  data: new SlashCommandBuilder().setName('ping').setDescription('Replies with pong'),\n  async execute(interaction) {\n    await interaction.reply('pong');\n  },\n};\n",
            "commands/roll.js": """const { SlashCommandBuilder } = require('discord.js');

function parseDice(notation) {
  const [count, sides] = notation.split('d').map(Number);
  return { count, sides };
}

function roll({ count, sides }) {
  const rolls = [];
  for (let i = 0; i < count; i++) rolls.push(1 + Math.floor(Math.random() * sides));
  return rolls;
}

module.exports = {
  data: new SlashCommandBuilder()
    .setName('roll')
    .setDescription('Roll dice, e.g. 2d6')
    .addStringOption((o) => o.setName('dice').setDescription('dice notation').setRequired(true)),
  async execute(interaction) {
    const rolls = roll(parseDice(interaction.options.getString('dice')));
    await interaction.reply(`${rolls.join(' + ')} = ${rolls.reduce((a, b) => a + b, 0)}`);
  },
  parseDice,
};
""",
        },
        [
            (
                "initial commit",
                [
                    "package.json",
                    "README.md",
                    ".env.example",
                    ".gitignore",
                    "index.js",
                    "commands/ping.js",
                ],
            ),
            ("add roll command", ["commands/roll.js", "README.md"]),
        ],
        [
            (
                "D1",
                "/roll d20 rolls nothing",
                "'d20' without a count parses to NaN dice and the bot answers ' = 0'; a missing count should mean one die",
                "commands/roll.js",
            ),
            (
                "D2",
                "The bot crashes on an unknown command",
                "An interaction for a command that is not loaded calls execute of undefined and the process dies; reply with an error instead",
                "index.js",
            ),
        ],
    )
)

# 11. Go library, one commit
SPECS.append(
    (
        "kv-go",
        {
            "go.mod": "module github.com/sam/kv\n\ngo 1.22\n",
            "README.md": """# kv

A file-backed key-value store for small Go programs.

```go
db, err := kv.Open("data.kv")
db.Set("name", "sam")
v, ok := db.Get("name")
```

`Open` loads the file, `Set` appends a line and `Get` reads from memory. The `cmd/kv`
tool wraps it for the shell.
""",
            "LICENSE": MIT,
            "kv.go": """package kv

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
""",
            "kv_test.go": """package kv

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
""",
            "cmd/kv/main.go": """package main

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
""",
        },
        [
            (
                "Initial commit",
                ["go.mod", "README.md", "LICENSE", "kv.go", "kv_test.go", "cmd/kv/main.go"],
            )
        ],
        [
            (
                "G1",
                "Add a Delete method",
                "There is no way to remove a key; add DB.Delete that removes it from memory and records the removal in the file",
                "kv.go",
            ),
            (
                "G2",
                "Values containing newlines corrupt the file",
                "Set writes the value raw, so a value with a newline breaks Open on the next start; escape newlines",
                "kv.go",
            ),
            (
                "G3",
                "kv with no arguments panics",
                "Running the kv tool without a subcommand panics with index out of range; print usage and exit 2",
                "cmd/kv/main.go",
            ),
        ],
    )
)

# 12. Python scraper, two commits, README heavy with words
SPECS.append(
    (
        "price-scraper",
        {
            "README.md": """# price-scraper

Watches product pages and emails me when a price drops.

## Setup

    pip install -r requirements.txt
    cp config.example.ini config.ini

## How it works

`scraper.py` downloads each product page listed in `config.ini` (`fetch_page`) and passes
the HTML to `extract_price` in `prices.py`, which finds the price and parses it into a
float. When the price is below the target, `notify.py` sends an email (`send_alert`).
""",
            "requirements.txt": "requests==2.32.3\nbeautifulsoup4==4.12.3\n",
            "config.example.ini": "[smtp]\nhost = smtp.example.com\nuser = me@example.com\n\n[products]\nhttps://shop.example.com/item/1 = 19.99\n",
            ".gitignore": GITIGNORE + "config.ini\n",
            "scraper.py": """import configparser

import requests

from notify import send_alert
from prices import extract_price


def fetch_page(url):
    response = requests.get(url, timeout=10)
    response.raise_for_status()
    return response.text


def main():
    config = configparser.ConfigParser()
    config.read("config.ini")
    for url, target in config["products"].items():
        price = extract_price(fetch_page(url))
        if price is not None and price < float(target):
            send_alert(config["smtp"], url, price)


if __name__ == "__main__":
    main()
""",
            "prices.py": '''import re

from bs4 import BeautifulSoup

PRICE = re.compile(r"(\\d+[.,]\\d{2})")


def extract_price(html):
    """The first price on the page, as a float (None if there is none)."""
    soup = BeautifulSoup(html, "html.parser")
    tag = soup.find(class_="price")
    if tag is None:
        return None
    match = PRICE.search(tag.get_text())
    return float(match.group(1)) if match else None
''',
            "notify.py": """import smtplib
from email.message import EmailMessage


def send_alert(smtp, url, price):
    message = EmailMessage()
    message["Subject"] = f"Price drop: {price}"
    message["From"] = message["To"] = smtp["user"]
    message.set_content(f"{url} now costs {price}")
    with smtplib.SMTP(smtp["host"]) as server:
        server.send_message(message)
""",
            "tests/test_prices.py": """from prices import extract_price


def test_extract():
    assert extract_price('<span class="price">19.99</span>') == 19.99


def test_none():
    assert extract_price("<p>nothing</p>") is None
""",
        },
        [
            (
                "initial version",
                [
                    "README.md",
                    "requirements.txt",
                    "config.example.ini",
                    ".gitignore",
                    "scraper.py",
                    "prices.py",
                    "notify.py",
                ],
            ),
            ("tests for prices", ["tests/test_prices.py", "prices.py"]),
        ],
        [
            (
                "X1",
                "European prices are parsed wrong",
                "extract_price reads '1.299,00' as 1.29 and '19,99' as 19.99 only by luck; handle thousands separators and a decimal comma",
                "prices.py",
            ),
            (
                "X2",
                "The SMTP login is missing",
                "send_alert never logs in, so Gmail refuses the message; use STARTTLS and the password from the smtp section",
                "notify.py",
            ),
            (
                "X3",
                "One failing page stops the whole run",
                "When one product page answers 404 the scraper raises and the other products are never checked; log the error and continue",
                "scraper.py",
            ),
        ],
    )
)

# 13. Rust CLI with lib, three commits
SPECS.append(
    (
        "todo-rs",
        {
            "Cargo.toml": '[package]\nname = "todo-rs"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nserde = { version = "1", features = ["derive"] }\nserde_json = "1"\n',
            "README.md": """# todo-rs

A todo list in Rust, saved as JSON.

    cargo run -- add "write report"
    cargo run -- list

The list is a `Vec<Item>` in `src/lib.rs`; `src/storage.rs` loads and saves it
(`load`, `save`) in `todo.json`.
""",
            ".gitignore": "/target\n",
            "src/main.rs": """use std::env;

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
""",
            "src/lib.rs": """use serde::{Deserialize, Serialize};

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
""",
            "src/storage.rs": """use std::fs;

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
""",
            "tests/storage.rs": """use todo_rs::{storage, Item};

#[test]
fn round_trip() {
    let dir = std::env::temp_dir().join("todo-rs-test.json");
    let path = dir.to_str().unwrap();
    storage::save(path, &[Item::new("a")]);
    assert_eq!(storage::load(path)[0].title, "a");
}
""",
        },
        [
            (
                "Initial commit",
                ["Cargo.toml", "README.md", ".gitignore", "src/main.rs", "src/lib.rs"],
            ),
            (
                "Save the list as JSON",
                ["src/storage.rs", "src/lib.rs", "src/main.rs", "Cargo.toml"],
            ),
            ("Test storage", ["tests/storage.rs", "src/storage.rs"]),
        ],
        [
            (
                "Y1",
                "Add a done command",
                "There is no way to mark an item done; add 'todo-rs done N' which sets done on the Nth item",
                "src/main.rs",
            ),
            (
                "Y2",
                "A corrupt todo.json panics",
                "load unwraps the serde_json error and panics with a long message when todo.json is not valid JSON; report it and keep the file",
                "src/storage.rs",
            ),
        ],
    )
)


ENV = dict(
    os.environ,
    GIT_AUTHOR_NAME="Sam",
    GIT_AUTHOR_EMAIL="sam@example.com",
    GIT_COMMITTER_NAME="Sam",
    GIT_COMMITTER_EMAIL="sam@example.com",
)


def comment(path):
    """A line that changes ``path`` when it is committed again (``None``: JSON)."""
    if path.endswith((".js", ".jsx", ".go", ".rs", ".ts")):
        return "// tidy\n"
    if path.endswith((".md",)):
        return "\nMore soon.\n"
    if path.endswith(".html"):
        return "<!-- v2 -->\n"
    if path.endswith(".json"):
        return None
    return "# tidy\n"


def build(root, name, files, commits):
    """The repository ``name`` under ``root``, built once: each commit writes its
    files (a file committed again gets a line more, a real change)."""
    d = os.path.join(root, name)
    if os.path.exists(d):
        return d
    os.makedirs(d)

    def git(*args):
        return subprocess.run(["git", *args], cwd=d, check=True, env=ENV, capture_output=True)

    git("init", "-q", "-b", "main")
    seen = set()
    for i, (subject, paths) in enumerate(commits):
        for p in paths:
            full = os.path.join(d, p)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            text = files[p]
            if p in seen:
                extra = comment(p)
                if extra is None:  # (JSON: another version, or a field more)
                    text = (
                        text.replace('"version": "', f'"version": "{i}.', 1)
                        if i < len(commits) - 1
                        else text
                    )
                    if text == files[p]:
                        text = text.replace("{", '{\n  "private": true,', 1)
                else:  # (the line more; committed a third time, without it again)
                    with open(full) as fh:
                        old = fh.read()
                    text = text + extra if old == text else text
            with open(full, "w") as fh:
                fh.write(text)
            seen.add(p)
        git("add", "-A")
        date = f"2026-0{1 + i // 28 % 9}-{1 + i % 28:02d}T12:00:00"
        subprocess.run(
            ["git", "commit", "-qm", subject],
            cwd=d,
            check=True,
            capture_output=True,
            env=dict(ENV, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date),
        )
    assert set(files) == seen, (name, set(files) - seen)
    return d


def gh(code, cwd, *args):
    """Run ``git hydrate ARGS`` with the code of the checkout ``code``."""
    env = dict(os.environ, PYTHONPATH=code)
    r = subprocess.run(
        [sys.executable, "-m", "git_hydrate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    if r.returncode:
        raise SystemExit(f"{cwd} {args}: {r.stderr}")
    return r.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--code", default=".", help="a git-hydrate checkout to run")
    parser.add_argument("--out", required=True, help="where to write the places (JSON)")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "small-repos"))
    args = parser.parse_args()
    code, out = os.path.abspath(args.code), args.out
    results = []
    for name, files, commits, tickets in SPECS:
        src = build(os.path.join(args.work, "repos"), name, files, commits)
        work = os.path.join(args.work, "runs", os.path.basename(out), name)
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(src, work, symlinks=True)
        for tid, title, objective, right in tickets:
            gh(
                code,
                work,
                "task-add",
                tid,
                "--title",
                title,
                "--objective",
                objective,
                "--acceptance",
                "the tests pass",
            )
            gh(code, work, "add-tree", tid)
            shown = json.loads(gh(code, work, "show", tid, "--json"))
            order = [(c["source"], c["reason"], c["score"]) for c in shown["context"]]
            place = [s for s, _r, _c in order].index(right) + 1
            results.append(
                {
                    "repo": name,
                    "ticket": tid,
                    "right": right,
                    "place": place,
                    "files": len(order),
                    "commits": len(commits),
                    "order": order[:4],
                }
            )
            print(
                f"{name:14s} {tid} {place:2d}/{len(order):2d} {right:22s} first: {order[0][0]} ({order[0][1]})",
                flush=True,
            )
    n = len(results)
    first = sum(r["place"] == 1 for r in results)
    mrr = sum(1 / r["place"] for r in results) / n
    top3 = sum(r["place"] <= 3 for r in results)
    print(
        f"tickets {n}: first {first}, top 3 {top3}, MRR {mrr:.3f}, mean place {sum(r['place'] for r in results) / n:.2f}"
    )
    with open(out, "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
