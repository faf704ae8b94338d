"""Generate ``man/git-hydrate.1`` from the command tree plus the prose below.

Run ``python -m git_hydrate.cli.manpage > man/git-hydrate.1`` after changing a
command, an option or a setting; ``tests/test_manpage.py`` fails while the
committed page differs from what this module generates.

The COMMANDS section and each command's options come from the click objects
registered in :data:`git_hydrate.cli.COMMANDS` (their help texts, exactly as
``-h`` prints them); the other sections come from the data structures here.
A ``hydrate.*`` setting is declared once, in :data:`git_hydrate.settings.SETTINGS`;
its CONFIGURATION entry comes from there.
"""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from typing import Any, Final

from .. import __version__
from ..settings import SETTINGS
from . import ALIASES, cli

__all__ = ["CONFIG_KEYS", "EXIT_CODES", "ConfigKey", "render", "walk_commands"]


@dataclass(frozen=True)
class ConfigKey:
    """One ``git config`` setting as the man page shows it."""

    name: str
    #: What the value is: ``BYTES``, ``REGEX``, ``PATH``, ``BOOLEAN``...
    value: str
    default: str
    description: str


#: Every ``hydrate.*`` setting, in the order the man page lists them (from
#: :data:`git_hydrate.settings.SETTINGS`, where each is declared once).
CONFIG_KEYS: Final[list[ConfigKey]] = [
    ConfigKey(s.key, s.metavar, s.default_text, s.description) for s in SETTINGS
]

#: (status, meaning), as git_hydrate.errors defines them.
EXIT_CODES: Final[list[tuple[int, str]]] = [
    (0, "Success."),
    (1, "Refused or failed: one error line on standard error (invalid input, no such task, "
     "conflict, corrupt data, a push blocked by hydrate.prePushStrict)."),
    (2, "Usage error: an unknown command, a bad option or argument."),
    (3, "A bug in git-hydrate: an unexpected error, reported in one line (set "
     "GIT_HYDRATE_DEBUG=1 for the traceback). Please report it."),
    (75, "Busy: the task kept changing under a write (another writer won every race); "
     "run the command again."),
    (128, "Not a git repository, no git binary, or a repository this version cannot use "
     "(reftable refs, an unknown extension, a core.sharedRepository value git refuses), "
     "like git itself."),
    (129, "Hung up (SIGHUP) while a first pull listed a remote (its git stopped first), "
     "or while it held lock files (removed first)."),
    (130, "Interrupted (Ctrl-C)."),
    (141, "The reader of standard output went away (git hydrate prompt ID | head): the "
     "process ends as git then does, killed by SIGPIPE, with nothing on standard error "
     "(a shell, and git running git hydrate, report 141; a program that waits for it "
     "sees the signal). What the command did, such as a task-edit, is done. This holds for "
     "every command, the fast path of a cached prompt included, once a write finds the "
     "reader gone (the prompt and every JSON answer, pack's and expand's included, are "
     "written a piece at a time, so a reader leaving in the middle is seen); output the "
     "pipe had already taken, as git's short ones, ends with the command's own status. "
     "The mcp server, whose session a leaving client ends, exits 0."),
    (143, "Terminated (SIGTERM) while a first pull listed a remote (its git stopped first), "
     "or while it held lock files (removed first)."),
]  # fmt: skip

_DESCRIPTION: Final = [
    "git-hydrate keeps tasks (tickets for AI coding workers) and the context attached to "
    "them inside the git repository, and packs a task into a JSON packet and a "
    "deterministic prompt under an exact byte budget, listing every attachment it "
    "omitted and why.",
    "Nothing is written to the work tree: each task is a ref under refs/hydrate/tasks/ "
    "whose commit chain is its history, and context bodies are blobs keyed by their "
    "sha256. Teams share tasks through the remotes they already have.",
    "Installed as git-hydrate on PATH, it runs as git hydrate, from any directory of a "
    "work tree, in linked worktrees, in bare repositories and in SHA-256 repositories. "
    "git hydrate -h and git hydrate COMMAND -h print short help with an example; "
    "git hydrate help shows this page after any install, with or without man.",
]

_STORAGE: Final = [
    ("refs/hydrate/tasks/<task-id>", "One ref per task, pointing at a commit; the commit "
     "chain is the task's history. Each change is one commit with Hydrate-Action: and "
     "Hydrate-Task: trailers, moved by a compare-and-swap and logged in the reflog (but for "
     "a task a pull or an import creates, which has no earlier value to recover). A pull "
     "or an import that creates 64 tasks or more (and a push's update of 64 new mirror "
     "refs) writes them straight into packed-refs, as git clone does, holding the locks "
     "git's own transaction takes; such an import writes the tasks' objects as one pack "
     "(git index-pack), before any ref. "
     "A ref "
     "there whose name is no task id is ignored: list and status warn, doctor reports it, "
     "push never publishes it, pull reports a remote one as ignored. What git-hydrate "
     "creates in the repository gets the permissions core.sharedRepository asks for, as "
     "git's own files do."),
    ("task.json", "The task document in the tip tree: format version and fields, "
     "deterministic JSON. Its selections are the add-tree runs it recorded, each with "
     "skipped: the files the task names that the run left out, and the first 5 it withheld "
     "as secrets that ranked among the first 25 places (path, reason, bytes and, when read "
     "from git, the blob id), which the prompt names in its Not included part."),
    ("links.json", "The context links: sha256, git object id, size, source, priority, "
     "expiry (seconds since the epoch), origin and path (set by add-tree and add-diff), "
     "sorted in packing order."),
    ("links/<a>.json", "Only in a task of more than 1,000 links: the links fanned out by "
     "the first hex digit of their sha256, each file in packing order, while links.json "
     "reads {\"format\":2,\"links\":[]}. One change then rewrites one of these files, not "
     "the whole list; the layout folds back into links.json at 1,000 links or fewer."),
    ("bodies/<aa>/<sha256>", "The body blobs, fanned out by the first two hex digits; "
     "reachable from the task commit, so git gc keeps them and git push carries them."),
    ("refs/hydrate/archive", "Every archived task in one ref: index.json (id to tip, "
     "title, status, kind, priority, tags, when and by whom) and tasks/<id>/ (the task's "
     "tree); the commit's parents keep each archived history reachable."),
    ("refs/hydrate/removed", "The removal record: removed.json (id to removed tip, when, "
     "by whom); its parents keep each removed history reachable. It travels with push "
     "and pull so other clones drop removed tasks too. Push sends no task, removal "
     "record or archive that pull would refuse (it reports each as SKIPPED, exit "
     "status 1); damaged here, the record stops pull, sync and task-rm with a line "
     "naming it."),
    ("refs/hydrate-remotes/<remote>/", "The mirror pull fetches a remote's refs/hydrate/* "
     "into before merging task by task (never refs/hydrate/ itself, never refs/remotes/)."),
    ("$GIT_COMMON_DIR/hydrate/list-cache, archive-list-cache, status-cache, sha256-cache",
     "Derived, disposable caches: a task's list summary and clock-independent status by "
     "tip commit (an archived task's summary by its archived commit), and each blob's "
     "sha256 and content class for add-tree (under the version of the code that "
     "classifies: after the secret rules change, blobs are scanned again; "
     "its lines in blocks of at most 64, each after a line of its CRC-32 and length: a "
     "block that fails them is a miss, its blobs read again and the file written anew; "
     "bounded at 400,000 blobs; written 0600 and "
     "trusted only when this user owns it and nobody else can write it, as the token-count "
     "and outline caches are: their content is acted on unchecked). Deleting them is "
     "always safe."),
    ("$GIT_COMMON_DIR/hydrate/queue-cache, search-index-2, search-bodies", "Derived, "
     "disposable caches as list-cache is: each task's ready-queue summary and searchable "
     "words by tip commit, and the words of attached bodies by blob id (search "
     "--attachments). An entry of these or of list-cache and status-cache that lacks a "
     "field, or holds one of another type, is a miss: read again. Deleting them is always "
     "safe."),
    ("$GIT_COMMON_DIR/hydrate/token-counts-<encoding>, outlines", "Derived, disposable: "
     "the token count of each body under a tokenizer's encoding, and each body's outline, "
     "by blob id, each started afresh when the code or packages that made it change. "
     "Written 0600 and trusted only when this user owns it and nobody else "
     "can write it. Deleting them is always safe."),
    ("$GIT_COMMON_DIR/hydrate/history/", "Derived, disposable: the changed paths and "
     "subject lines of a source revision's history, as ranking reads them, one file per "
     "commit id (a commit's history never changes; in a shallow clone, or one with "
     "grafts, the name also says where the history is cut, so a deepened clone reads it "
     "anew; the commits at a shallow clone's cut are left out: git shows each as adding "
     "every file it holds). Deleting it is always safe."),
    ("$GIT_COMMON_DIR/hydrate/secret-prefilter", "Derived, disposable: the secret scan's "
     "compiled prefilter (with the optional hyperscan), under the key of what it holds "
     "(expressions, library version, machine); any other is rebuilt. Written 0600 and "
     "trusted only when this user owns it. Deleting it is always safe."),
    ("$GIT_COMMON_DIR/hydrate/claims-seen", "When this clone first saw each claim in its "
     "state (a pull notes it), the clock staleness is judged by: a header line, then "
     "one line per sighting (task id, state digest, POSIX seconds); bounded. Written "
     "for this user only and trusted only then; deleting it is safe (a claim's own dates "
     "count again)."),
    ("$GIT_COMMON_DIR/hydrate/git-features", "What the installed git was found to lack "
     "(a command or option asked for first), remembered per git binary, so that an "
     "upgraded git is asked again. Deleting it is always safe."),
    ("$GIT_COMMON_DIR/hydrate/staged-attributes", "Derived, disposable: the staged "
     ".gitattributes (git ls-files -s) that a git without check-attr --source reads "
     "attributes from, under the index file's state (device, inode, size, times and "
     "checksum) and the GIT_*_PATHSPECS variables, with its CRC-32 and length; another "
     "state, a foreign file or one that fails them is a miss, asked again. Written 0600. "
     "Deleting it is always safe."),
    ("$GIT_COMMON_DIR/hydrate/tree-verdicts/", "Derived, disposable: the sha256 and "
     "content class of each file add-tree read of the 8 trees it read last, one file per "
     "tree id, under the version of the code that classifies, so a new task on a known "
     "tree does not load the whole sha256-cache; used only for the same files in the same "
     "order and while the sha256-cache itself is there, this user's and of the same rules; "
     "a file of other rules, foreign, or one that fails its CRC-32 or length is a miss, "
     "kept anew. "
     "Written 0600. Deleting it is always safe."),
    ("$GIT_COMMON_DIR/hydrate/tree-listings/", "Derived, disposable: the listings of the "
     "8 trees add-tree read last, one file per tree id, so a known tree is not listed "
     "again and a tree near a kept one costs git's diff of the two: a header line, the "
     "CRC-32 and length of the entries, then the entries as four msgpack columns (the paths "
     "joined by NUL, a byte per kind, the blob ids end to end, the sizes as 8-byte "
     "little-endian integers). A file of another layout, foreign, or one that fails its "
     "CRC-32 or length is a miss, listed and kept anew. Written 0600. Deleting it is "
     "always safe."),
    ("$GIT_COMMON_DIR/hydrate/tree-attributes/", "Derived, disposable: the answer of "
     "git check-attr (linguist-generated, binary, diff, linguist-vendored) for the 8 trees "
     "add-tree checked last, "
     "one file per tree id, with the digest of what else decides it (info/attributes, "
     "core.attributesFile, the system file, GIT_ATTR_NOSYSTEM and GIT_ATTR_SOURCE, and "
     "the staged .gitattributes for a git without check-attr --source): a change to any "
     "of them, a foreign file or one that fails its CRC-32 or length is a miss, checked "
     "again. "
     "Written 0600. Deleting it is always safe."),
    ("$GIT_COMMON_DIR/hydrate/tree-paths/", "Derived, disposable: the paths the path "
     "rules skip (skipped_dir, skipped_ext, generated, own_output, bad_path) of the 8 "
     "trees add-tree read last, one file per tree id, so a known tree's paths are not "
     "judged again; with the digest of git-hydrate's version and of its rules' modules "
     "(their size and time): another digest, a foreign file or one that fails its CRC-32 "
     "or length is a miss, judged again. Written 0600. Deleting it is always safe."),
    ("$GIT_COMMON_DIR/hydrate/blob-facts", "Derived, disposable: what ranking learned "
     "of each blob (text or binary, size, word counts, defined names), keyed by blob id, "
     "so add-tree, rank and rank --suggest read a body once. Bounded (60,000 blobs, those "
     "the last run used kept first); a damaged or foreign file is a miss, rewritten by the "
     "next run. Written 0600. Deleting it is always safe. The words are counted in C "
     "when a compiler built git_hydrate._speedups at install time, else in Python: the "
     "same facts."),
    ("$GIT_COMMON_DIR/hydrate/rank-index/", "Derived, disposable: ranking's word index "
     "of the 4 trees ranked last, one file per tree id (each word's files and counts, "
     "of contents, paths and defined names, and each file's blob id), so a new task on "
     "a known tree scores only the files that hold its words; a file whose blob changed "
     "is scored from its facts. The first task on a tree of 5,000 files or more builds "
     "it in a second process, forked before the tree is listed (not where the run may "
     "not fork: see add-tree's two cores in docs/hydrating.md); the index is the same. "
     "That process is given up after 30 s without a sign of life (it sends one every "
     "second while it writes the file). "
     "A file that fails its CRC-32, is foreign or damaged is a "
     "miss, built again. Written 0600. Deleting it is always safe."),
    ("$GIT_COMMON_DIR/hydrate/prompt-cache/", "The prompt cache (hydrate.promptCache): "
     "one file per prompt, named by two checksums of its key, written whole (0600) and "
     "trusted only when this user owns it and nobody else can write it. GHPCACHE, the "
     "header's length and its CRC-32 (4 bytes each, big-endian), the header (UTF-8 JSON: "
     "format 6, the key that decides the prompt, compared whole; since and until, the "
     "window of moments in which the same attachments have expired; prompt_bytes; "
     "packet_bytes, -1 for none; prompt_crc and packet_crc, the CRC-32 of each; the "
     "result's fields), the prompt, then the packet's JSON if it was built with one. A "
     "file that does not read, whose size is not what its header says, or whose header, "
     "prompt or packet fails its CRC-32 (checked before a byte is printed) is a miss, "
     "written again. A "
     "hit of prompt ID with only budget options, -o and -C is printed before the rest of "
     "git-hydrate is loaded. Deleting the directory is always safe."),
    ("$GIT_COMMON_DIR/hydrate/own-selections, refresh-memo", "The add-tree runs this "
     "clone made itself (prompt --refresh takes only those), and, for the newest 256 task "
     "tips at which a refresh recognised every run, what it said and what it depended on "
     "beside the tip (each run's resolved revision, the settings a run reads, the record "
     "of own runs, the deciding code and attributes files): while all of it holds, "
     "prompt ID --refresh is answered like a prompt-cache hit. Written 0600, trusted only "
     "when this user owns it and nobody else can write it; deleting them is safe (the "
     "next refresh names this clone's earlier runs as another clone's)."),
    ("$GIT_DIR/hydrate/current-task", "The task start made current in this work tree "
     "(each linked work tree has its own); current --clear forgets it."),
    ("$GIT_DIR/hydrate/agents/", "What the agent bridges wrote: for each agent, "
     "<agent>.json (each file's original before git-hydrate first touched it, and what "
     "was written), so that removing a bridge restores the originals and keeps later "
     "edits."),
    ("$GIT_DIR/hydrate/artefacts/<task-id>/", "The pre-push artefacts (see "
     "hydrate.artefactDir): <task-id>.prompt.md, <task-id>.packet.json (the expand "
     "result) and manifest.json (task, task tip, pushed commit, sha256 and size of each "
     "file, omissions). Expiry is judged at the pushed commit's committer time, so equal "
     "task state and commit give byte-identical files."),
    ("hooks/pre-push", "The hook shim git hydrate hooks install writes into the hooks "
     "directory (core.hooksPath honoured); a pre-push hook of another origin is kept as "
     "pre-push.legacy and runs first."),
]  # fmt: skip

_ENVIRONMENT: Final = [
    ("GIT_DIR, GIT_WORK_TREE, GIT_CONFIG_PARAMETERS", "Honoured as git honours them "
     "(git --git-dir=..., git -c key=value)."),
    ("GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, GIT_AUTHOR_DATE, GIT_COMMITTER_DATE",
     "The author and the dates of the commits written, as git reads them (any date format "
     "git accepts); GIT_COMMITTER_DATE is also the time of checkpoints and archives."),
    ("GIT_HYDRATE_DEBUG", "When set, an internal error prints its traceback."),
    ("_GIT_HYDRATE_COMPLETE", "Shell completion: eval \"$(_GIT_HYDRATE_COMPLETE=bash_source "
     "git-hydrate)\" (also zsh_source, fish_source)."),
    ("PRE_COMMIT_FROM_REF, PRE_COMMIT_TO_REF, PRE_COMMIT_LOCAL_BRANCH, "
     "PRE_COMMIT_REMOTE_BRANCH", "Read by hook pre-push when its standard input is empty, "
     "as under the pre-commit framework."),
]  # fmt: skip

_EXAMPLES: Final = [
    ("Create a task, attach context, and print its prompt within 20000 bytes:",
     "git hydrate task-add M-1002 --objective \"Add GET /healthz\" \\\n"
     "    --acceptance \"200 with the request id header\"\n"
     "git hydrate add M-1002 --file notes.txt --priority 10\n"
     "git hydrate prompt M-1002 --max-bytes 20000"),
    ("Pack with a budget from the command line instead of the configuration:",
     "git -c hydrate.maxBytes=8k hydrate pack M-1002"),
    ("Write prompt artefacts on every push, blocking pushes of tasks that do not fit:",
     "git hydrate hooks install\n"
     "git config hydrate.prePushStrict true\n"
     "git push    # writes .git/hydrate/artefacts/M-1002/ for commits naming M-1002"),
    ("The same from the pre-commit framework (.pre-commit-config.yaml):",
     "- repo: <git-hydrate repository>\n"
     "  rev: <tag>\n"
     "  hooks:\n"
     "    - id: git-hydrate-pre-push\n"
     "      stages: [pre-push]"),
]  # fmt: skip

_SEE_ALSO: Final = "git(1), git-config(1), git-push(1), githooks(5), gitrevisions(7)"


# -- roff --------------------------------------------------------------------------

_ESCAPES: Final = str.maketrans(
    {
        "\\": r"\e",
        "-": r"\-",
        "'": r"\(aq",
        "`": r"\(ga",
        "^": r"\(ha",
        "~": r"\(ti",
    }
)


def escape(text: str) -> str:
    """``text`` as roff text: hyphens, quotes and backslashes kept literal."""
    out = text.translate(_ESCAPES)
    if not out.isascii():
        # groff reads the page as Latin-1 unless told otherwise; name every other
        # character by its code point (em dashes, arrows, ellipses in help texts).
        out = "".join(ch if ch.isascii() else f"\\[u{ord(ch):04X}]" for ch in out)
    return "\n".join(r"\&" + line if line[:1] in (".", "'") else line for line in out.split("\n"))


def _bold(text: str) -> str:
    return rf"\fB{escape(text)}\fR"


def _paragraphs(text: str) -> list[str]:
    """Roff for a click help text: paragraphs refilled, ``\\b`` blocks kept verbatim."""
    out: list[str] = []
    for block in text.strip().split("\n\n"):
        lines = block.split("\n")
        if lines[0].strip() == "\b":
            out += [
                ".sp",
                ".RS 4",
                ".nf",
                escape(textwrap.dedent("\n".join(lines[1:]))),
                ".fi",
                ".RE",
            ]
        else:
            out += [".sp", escape(" ".join(line.strip() for line in lines))]
    return out


def _entry(term: str, body: list[str]) -> list[str]:
    return [".PP", term, ".RS 4", *body, ".RE"]


# -- the command tree ------------------------------------------------------------------


def walk_commands() -> list[tuple[str, Any, Any]]:
    """Every command as ``(full name, command, context)``, groups before their subcommands.

    Aliases are left out (they are named in their target's entry).
    """
    root = cli.context_class(cli, info_name="git hydrate", **cli.context_settings)
    found: list[tuple[str, Any, Any]] = []

    def visit(group: Any, parent: Any) -> None:
        for name in group.list_commands(parent):
            command = group.get_command(parent, name)
            ctx = command.context_class(command, info_name=name, parent=parent)
            found.append((ctx.command_path, command, ctx))
            if hasattr(command, "list_commands"):
                visit(command, ctx)

    visit(cli, root)
    return found


def _options(command: Any, ctx: Any) -> list[str]:
    out: list[str] = []
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option" or param.hidden:
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        term, help_text = record
        out += _entry(_bold(term), [escape(help_text or "")])
    return out


def _aliases_of(name: str) -> list[str]:
    return sorted(alias for alias, target in ALIASES.items() if target == name)


def render() -> str:
    """The whole man page, as roff."""
    lines = _head() + _commands() + _global_options()
    lines += [
        ".SH CONFIGURATION",
        ".sp",
        escape(
            "Settings are read through git config, so system, global, repository and "
            "included files count, and git -c key=value (GIT_CONFIG_PARAMETERS) overrides "
            "them for one command."
        ),
    ]
    for key in CONFIG_KEYS:
        lines += _entry(
            rf"\fB{escape(key.name)}\fR \fI{escape(key.value)}\fR",
            [escape(f"{key.description} Default: {key.default}.")],
        )

    lines += [".SH FILES AND STORAGE FORMAT"]
    for term, text in _STORAGE:
        lines += _entry(_bold(term), [escape(text)])

    lines.append(".SH ENVIRONMENT")
    for term, text in _ENVIRONMENT:
        lines += _entry(_bold(term), [escape(text)])

    lines.append(".SH EXIT STATUS")
    for code, text in EXIT_CODES:
        lines += _entry(_bold(str(code)), [escape(text)])

    lines.append(".SH EXAMPLES")
    for text, commands in _EXAMPLES:
        lines += [".sp", escape(text), ".sp", ".RS 4", ".nf", escape(commands), ".fi", ".RE"]

    lines += [".SH SEE ALSO", ".sp", escape(_SEE_ALSO)]
    return "\n".join(lines) + "\n"


def _head() -> list[str]:
    """The title, name, synopsis and description."""
    lines = [
        rf".\" Generated by python -m git_hydrate.cli.manpage from git-hydrate {__version__}; "
        "do not edit.",
        rf'.TH "GIT\-HYDRATE" "1" "" "git\-hydrate {escape(__version__)}" "Git Manual"',
        ".nh",
        ".ad l",
        ".SH NAME",
        r"git\-hydrate \- keep tasks and their context in git; pack them into prompts under "
        "an exact byte budget",
        ".SH SYNOPSIS",
        ".sp",
        ".nf",
        r"\fBgit hydrate\fR [\fB\-C\fR \fIPATH\fR] [\fB\-\-compact\fR] \fICOMMAND\fR "
        r"[\fIARGS\fR]...",
        r"\fBgit hydrate\fR [\fB\-h\fR | \fB\-\-version\fR]",
        r"\fBgit\-hydrate\fR \fICOMMAND\fR [\fIARGS\fR]...",
        ".fi",
        ".SH DESCRIPTION",
    ]
    for paragraph in _DESCRIPTION:
        lines += [".sp", escape(paragraph)]
    return lines


def _commands() -> list[str]:
    """Every command (and subcommand) with its usage, help, aliases and options."""
    lines = [".SH COMMANDS"]
    for path, command, ctx in walk_commands():
        usage = " ".join(command.collect_usage_pieces(ctx))
        name = path.removeprefix("git hydrate ")
        term = rf"{_bold(name)} {escape(usage)}".rstrip()
        body = _paragraphs(command.help or "")
        aliases = _aliases_of(name) if " " not in name else []
        if aliases:
            body += [".sp", escape(f"Alias: {', '.join(aliases)}.")]
        body += _options(command, ctx)
        lines += _entry(term, body)
    return lines


def _global_options() -> list[str]:
    """The options given before the command, and where the help is."""
    root_ctx = cli.context_class(cli, info_name="git hydrate", **cli.context_settings)
    lines = [".SH OPTIONS", ".sp", escape("Global options, given before the command:")]
    lines += _options(cli, root_ctx)
    lines += [
        ".sp",
        escape(
            "Every command accepts -h and --help. git hydrate help shows this page after "
            "any install (rendered from the code: through man -l on a terminal when man "
            "is installed and can show it, else as plain text), and so does git-hydrate "
            "--help on a terminal. git hydrate --help is answered by git, which runs man "
            "git-hydrate: that finds the page a regular or pipx install puts in "
            "<prefix>/share/man/man1, not after an editable install. -h, and --help after "
            "a command name, print the short help."
        ),
    ]
    return lines


def main() -> None:
    """Print the page to standard output."""
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
