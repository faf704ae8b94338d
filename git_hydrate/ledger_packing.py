"""The Ledger's packing: packets and prompts of a stored task under one budget.

A mixin of :class:`~git_hydrate.ledger.Ledger` (kept apart so that the facade
stays one screenful per concern); each method makes one call into
:mod:`git_hydrate.pack.stored`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from .pack.budget import Budget, resolve_budget
from .results import (
    ExpandResult,
    PackResult,
    PromptFields,
    PromptResult,
)
from .store import Repository
from .taskrefs import TaskRefs

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

    from .pack.budget import BudgetOptions
    from .pack.memo import BodyMemo


__all__ = ["Packing"]


class Packing:
    """:meth:`budget`, :meth:`pack`, :meth:`expand`, :meth:`prompt`,
    :meth:`check_prompt_budget` and :meth:`write_prompt` of a :class:`Ledger`."""

    repo: Repository
    refs: TaskRefs

    def budget(self, max_bytes: int | None = None, **options: Unpack[BudgetOptions]) -> Budget:
        """The budget a packing uses: ``max_bytes`` and ``options`` (``max_tokens``,
        ``encoding``, ``outline``), each ``None`` one taken from the ``hydrate.*``
        settings. Build it once and pass it as ``budget=`` to :meth:`pack`,
        :meth:`expand`, :meth:`prompt`, :meth:`write_prompt`."""
        return resolve_budget(self.repo.settings, max_bytes, **options)

    def _budget(
        self, given: Budget | None, max_bytes: int | None, options: BudgetOptions
    ) -> Budget:
        if given is None:
            return self.budget(max_bytes, **options)
        if max_bytes is not None or options:
            raise TypeError("give budget= or the budget's options, not both")
        return given

    def pack(
        self,
        task_id: str,
        max_bytes: int | None = None,
        now: datetime | float | None = None,
        *,
        budget: Budget | None = None,
        **options: Unpack[BudgetOptions],
    ) -> PackResult:
        """The task as a packet whose compact JSON fits ``max_bytes``.

        Returns ``{packet, packet_bytes, max_bytes, token_estimate, token_count,
        note, omitted}``. ``packet_bytes`` is the exact length of the packet's
        compact JSON encoding (UTF-8, sorted keys, no whitespace). With
        ``max_tokens`` (or ``hydrate.maxTokens``), its tokens in ``encoding``
        are bounded too and ``token_count`` is exact (adds ``max_tokens`` and
        ``token_encoding``); with ``outline`` (or ``hydrate.outline``), what
        does not fit in full may be kept as its outline (adds ``shrunk``).
        ``budget`` (from :meth:`budget`) stands for ``max_bytes`` and the options.

        Raises:
            Conflict: the mandatory structure alone does not fit.
            ValidationError: a token budget without ``git-hydrate[tokens]``.
        """
        from .pack.stored import pack

        return pack(self.refs, task_id, self._budget(budget, max_bytes, options), now)

    def expand(
        self,
        task_id: str,
        max_bytes: int | None = None,
        now: datetime | float | None = None,
        *,
        extra: dict[str, Any] | None = None,
        budget: Budget | None = None,
        **options: Unpack[BudgetOptions],
    ) -> ExpandResult:
        """The packet *and* its prompt, measured together against ``max_bytes``.

        Returns ``{packet, prompt, packet_bytes, prompt_bytes, total_bytes,
        max_bytes, token_estimate, note, omitted}``; the budget as for
        :meth:`pack` (a token budget bounds packet and prompt together, like the
        byte budget).

        Raises:
            ValidationError: the mandatory structure alone does not fit.
        """
        from .pack.stored import expand

        limits = self._budget(budget, max_bytes, options)
        return expand(self.refs, task_id, limits, now, extra=extra)

    def prompt(
        self,
        task_id: str,
        max_bytes: int | None = None,
        now: datetime | float | None = None,
        *,
        cache: bool = True,
        budget: Budget | None = None,
        **options: Unpack[BudgetOptions],
    ) -> PromptResult:
        """The prompt, measured alone: its own UTF-8 bytes fit ``max_bytes``.

        Returns ``{packet, prompt, packet_bytes, prompt_bytes, max_bytes,
        token_estimate, note, omitted, kept, attachments, needed_bytes}``
        (the packet the prompt renders comes along, unmeasured); the budget as
        for :meth:`pack`. ``cache``: read back a prompt built before for the
        same task tip, budget and expired attachments (see
        :mod:`git_hydrate.pack.prompt_cache`).

        Raises:
            ValidationError: the prompt without attachments does not fit.
        """
        from .pack.stored import prompt

        limits = self._budget(budget, max_bytes, options)
        return prompt(self.refs, task_id, limits, now, cache=cache)

    def check_prompt_budget(
        self,
        task_id: str,
        max_bytes: int | None = None,
        *,
        budget: Budget | None = None,
        **options: Unpack[BudgetOptions],
    ) -> None:
        """Check, before anything is attached, that the task's prompt without
        attachments fits the budget (given as for :meth:`prompt`).

        Raises:
            ValidationError: as :meth:`prompt` would: the head does not fit.
        """
        from .pack.stored import check_budget

        check_budget(self.refs, task_id, self._budget(budget, max_bytes, options))

    def write_prompt(
        self,
        task_id: str,
        out: SupportsWrite[bytes],
        max_bytes: int | None = None,
        now: datetime | float | None = None,
        *,
        cache: bool = True,
        memo: BodyMemo | None = None,
        budget: Budget | None = None,
        **options: Unpack[BudgetOptions],
    ) -> PromptFields:
        """The prompt of :meth:`prompt`, written to the binary stream ``out`` as
        UTF-8, in about half the memory: it is never held as one text.

        Returns :meth:`prompt`'s result without ``prompt`` and ``packet``.
        Nothing is written when the prompt cannot be built (the error is raised
        first); the arguments are :meth:`prompt`'s. ``memo``: the bodies an
        :meth:`add_tree` just read (given the same memo), taken from memory
        instead of being read and hashed again.
        """
        from .pack.stored import write_prompt

        limits = self._budget(budget, max_bytes, options)
        return write_prompt(self.refs, task_id, out, limits, now, cache=cache, memo=memo)
