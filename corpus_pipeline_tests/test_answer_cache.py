"""The answer cache: bounded, per namespace, and never keeping answers of a revision that can
no longer be served."""

from __future__ import annotations

from query_service.snapshot.cache import AnswerCache, CacheKey


def _key(namespace: str, revision: int, request: str = "q") -> CacheKey:
    return CacheKey("reader", namespace, revision, "classic", request)


def test_an_answer_is_returned_for_its_own_revision_only():
    cache = AnswerCache(max_entries=10, max_bytes=1000)
    cache.put(_key("birds", 1), b"answer")
    assert cache.get(_key("birds", 1)) == b"answer"
    assert cache.get(_key("birds", 2)) is None


def test_the_first_answer_of_a_newer_revision_drops_the_older_revisions_answers():
    cache = AnswerCache(max_entries=10, max_bytes=1000)
    cache.put(_key("birds", 1, "a"), b"one")
    cache.put(_key("birds", 1, "b"), b"two")
    cache.put(_key("fish", 1), b"three")
    cache.put(_key("birds", 2, "a"), b"four")
    assert cache.get(_key("birds", 1, "a")) is None and cache.get(_key("birds", 1, "b")) is None
    assert cache.get(_key("fish", 1)) == b"three", "other namespaces keep theirs"
    counts = cache.counts()
    assert (counts["birds"].entries, counts["birds"].bytes) == (1, 4)
    assert cache.entries == 2 and cache.size_bytes == len(b"three") + len(b"four")


def test_a_late_answer_of_an_older_revision_does_not_drop_the_newer_ones():
    cache = AnswerCache(max_entries=10, max_bytes=1000)
    cache.put(_key("birds", 2), b"new")
    cache.put(_key("birds", 1), b"late")  # a request that started on the old revision
    assert cache.get(_key("birds", 2)) == b"new"


def test_the_cache_evicts_the_least_recently_used_past_its_bounds():
    cache = AnswerCache(max_entries=2, max_bytes=1000)
    cache.put(_key("birds", 1, "a"), b"a")
    cache.put(_key("birds", 1, "b"), b"b")
    assert cache.get(_key("birds", 1, "a")) == b"a"
    cache.put(_key("birds", 1, "c"), b"c")
    assert cache.get(_key("birds", 1, "b")) is None
    assert cache.get(_key("birds", 1, "a")) == b"a"
