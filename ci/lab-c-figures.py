#!/usr/bin/env python3
"""Lab C's figures from `cargo xtask lab run --lab c` artifacts, one Markdown row per run.

Usage: python3 ci/lab-c-figures.py target/lab-artifacts/<run-id> [...]

Reads <run>/c/workdir/evidence/05-07.json and <run>/c/grades.json (what the run recorded) and
prints: timeouts out of the violating requests during the leader's freeze, when the Lease moved
(ms after the freeze, from the reads each second), the former leader's restart count, the first
deny after the resume, stored-unvalidated out of the requests during the follower's freeze, the
Lease during it, act 7's wait, and the grades.
"""
import json
import sys
from datetime import datetime
from pathlib import Path


def t(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def ms(a, b):
    return int((t(b) - t(a)).total_seconds() * 1000)


def row(run):
    ev = lambda n: json.loads((run / "c/workdir/evidence" / f"{n:02}.json").read_text())["facts"]
    f5, f6, f7 = ev(5), ev(6), ev(7)
    count = lambda f, o: sum(1 for r in f["bad"] if r["outcome"] == o)
    before = f5["lease_before"]["holder"]
    moved = next(
        (s for s in f5["lease_samples"]
         if s.get("holder") and s["holder"] != before and t(s["at"]) <= t(f5["freeze"]["resumed_at"])),
        None,
    )
    takeover = f"{ms(f5['freeze']['frozen_at'], moved['at'])} ms" if moved else "kept"
    t5 = f5["target_after"]
    restart = f"{t5['restart_count_before']}→{t5['restart_count_after']}" + (
        " same UID" if t5["pod_uid_after"] == t5["pod_uid_before"] else " new pod")
    b6 = f6["lease_before"]["holder"]
    kept6 = all(s.get("holder") == b6 for s in f6["lease_samples"] if not s.get("error"))
    grades = json.loads((run / "c/grades.json").read_text())
    passed = sum(1 for g in grades if not g.get("findings"))
    return (
        f"| {run.name} | {count(f5, 'webhook-timeout')}/{len(f5['bad'])} | {takeover} | {restart} "
        f"| {f5['first_deny_after_resume_ms']} ms | {count(f6, 'stored')}/{len(f6['bad'])} "
        f"| {'unchanged' if kept6 else 'moved'} | {f7['waited_ms'] / 1000:.1f} s | {passed}/{len(grades)} |"
    )


print("| run | act 5: timeouts | Lease moved after | former leader restarts | first deny after resume "
      "| act 6: stored unvalidated | Lease in act 6 | act 7 wait | grades |")
print("|---|---|---|---|---|---|---|---|---|")
for arg in sys.argv[1:]:
    print(row(Path(arg)))
