#!/usr/bin/env python3
"""Writes services/brokerd/src/secrets/rules.json: the subset of gitleaks' rules brokerd masks.

Usage: scripts/vendor-secret-rules.py <gitleaks checkout> <commit>
Regexes are copied verbatim: brokerd runs them with re2js, an RE2 port, so Go's
syntax needs no conversion (and matching stays linear-time on hostile text).
Allowlists are dropped (masking a test fixture costs less than leaking a key);
Boxmaker's own rules (`source: "boxmaker"`) cover what gitleaks leaves out.
"""
import json, sys, tomllib, pathlib

KEEP = [
    "private-key", "aws-access-token",
    "github-pat", "github-fine-grained-pat", "github-oauth", "github-app-token", "github-refresh-token",
    "gitlab-pat", "gitlab-pat-routable", "gitlab-ptt", "gitlab-rrt", "gitlab-deploy-token",
    "gitlab-runner-authentication-token",
    "slack-bot-token", "slack-user-token", "slack-app-token", "slack-webhook-url",
    "slack-config-access-token", "slack-legacy-token",
    "stripe-access-token", "jwt",
    "openai-api-key", "anthropic-api-key", "npm-access-token", "gcp-api-key", "pypi-upload-token",
    "huggingface-access-token",
]

# Rules whose match can span lines (the rest are matched line by line, which is what keeps scanning fast).
MULTILINE = {"private-key"}

checkout, commit = pathlib.Path(sys.argv[1]), sys.argv[2]
cfg = tomllib.loads((checkout / "config" / "gitleaks.toml").read_text())
by_id = {r["id"]: r for r in cfg["rules"]}
rules = []
for rid in KEEP:
    r = by_id[rid]
    out = {"id": rid, "source": "gitleaks", "description": r["description"], "regex": r["regex"],
           "keywords": r.get("keywords", [])}
    if "entropy" in r: out["entropy"] = r["entropy"]
    if "secretGroup" in r: out["secretGroup"] = r["secretGroup"]
    if rid in MULTILINE: out["multiline"] = True
    rules.append(out)

here = pathlib.Path(__file__).resolve().parent.parent / "services/brokerd/src/secrets/rules.json"
old = json.loads(here.read_text()) if here.exists() else {"rules": []}
own = [r for r in old["rules"] if r.get("source") == "boxmaker"]
examples = {r["id"]: r.get("examples", []) for r in old["rules"]}
for r in rules:
    r["examples"] = examples.get(r["id"], [])
doc = {
    "about": "Secret-recognition rules for brokerd (services/brokerd/src/secrets/). Rules with source "
             "\"gitleaks\" are copied verbatim from gitleaks' config/gitleaks.toml by scripts/vendor-secret-rules.py; "
             "examples are Boxmaker's own made-up values, each test-matched by its rule.",
    "upstream": {"project": "https://github.com/gitleaks/gitleaks", "file": "config/gitleaks.toml",
                 "commit": commit, "license": "MIT", "copyright": "Copyright (c) 2019 Zachary Rice"},
    "rules": rules + own,
}
here.write_text(json.dumps(doc, indent=2) + "\n")
print(f"{len(rules)} gitleaks rules, {len(own)} boxmaker rules -> {here}")
