"""GitHub tools against a fake api.github.com answering with GitHub's documented example bodies."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest
from workbench_plugins.github import tools as github_tools

from tests.plugins.catalog_support import Call, Case, Plugin, check_catalog, run_case, run_tool
from tests.support.gateways import make_gateway, principal_for

PLUGIN = Plugin("github")

API = "https://api.github.com"
REPO = f"{API}/repos/octocat/Hello-World"
LINK_NEXT = {
    "link": f'<{API}/repositories/1296269/pulls?page=3&per_page=2>; rel="next", '
    f'<{API}/repositories/1296269/pulls?page=9&per_page=2>; rel="last"'
}

USER = {"login": "octocat", "id": 1, "type": "User"}
PR = {
    "url": f"{REPO}/pulls/1347",
    "id": 1,
    "html_url": "https://github.com/octocat/Hello-World/pull/1347",
    "number": 1347,
    "state": "open",
    "locked": True,
    "title": "Amazing new feature",
    "user": USER,
    "body": "Please pull these awesome changes in!",
    "labels": [{"id": 208045946, "name": "bug", "color": "f29513"}],
    "created_at": "2011-01-26T19:01:12Z",
    "updated_at": "2011-01-26T19:01:12Z",
    "head": {
        "label": "octocat:new-topic",
        "ref": "new-topic",
        "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
    },
    "base": {"label": "octocat:master", "ref": "master", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e"},
    "draft": False,
    "merged": False,
    "mergeable": True,
    "mergeable_state": "clean",
    "comments": 10,
    "commits": 3,
    "additions": 100,
    "deletions": 3,
    "changed_files": 5,
}
PR_SHAPED = {
    "number": 1347,
    "title": "Amazing new feature",
    "state": "open",
    "draft": False,
    "html_url": "https://github.com/octocat/Hello-World/pull/1347",
    "user_login": "octocat",
    "head_ref": "new-topic",
    "base_ref": "master",
    "created_at": "2011-01-26T19:01:12Z",
    "updated_at": "2011-01-26T19:01:12Z",
}
ISSUE = {
    "id": 1,
    "number": 1347,
    "state": "open",
    "title": "Found a bug",
    "body": "I'm having a problem with this.",
    "user": USER,
    "labels": [{"id": 208045946, "name": "bug"}],
    "assignees": [USER],
    "comments": 0,
    "html_url": "https://github.com/octocat/Hello-World/issues/1347",
    "repository_url": "https://api.github.com/repos/octocat/Hello-World",
    "created_at": "2011-04-22T13:33:48Z",
    "updated_at": "2011-04-22T13:33:48Z",
}
ISSUE_SHAPED = {
    "number": 1347,
    "title": "Found a bug",
    "state": "open",
    "html_url": "https://github.com/octocat/Hello-World/issues/1347",
    "user_login": "octocat",
    "comments": 0,
    "created_at": "2011-04-22T13:33:48Z",
    "updated_at": "2011-04-22T13:33:48Z",
    "labels": ["bug"],
    "assignees": ["octocat"],
    "isPullRequest": False,
}
REPO_BODY = {
    "id": 1296269,
    "name": "Hello-World",
    "full_name": "octocat/Hello-World",
    "owner": USER,
    "private": False,
    "html_url": "https://github.com/octocat/Hello-World",
    "description": "This your first repo!",
    "language": None,
    "forks_count": 9,
    "stargazers_count": 80,
    "open_issues_count": 0,
    "default_branch": "master",
    "topics": ["octocat", "atom", "electron", "api"],
    "archived": False,
    "updated_at": "2011-01-26T19:14:43Z",
}
REPO_SHAPED = {
    "full_name": "octocat/Hello-World",
    "description": "This your first repo!",
    "private": False,
    "html_url": "https://github.com/octocat/Hello-World",
    "default_branch": "master",
    "language": None,
    "stargazers_count": 80,
    "open_issues_count": 0,
    "updated_at": "2011-01-26T19:14:43Z",
}
FILE_TEXT = "# Hello World\nHello world from octocat!\n"

# GitHub's documented example (components/examples/job-paginated), its "Run Tests" step failed.
JOB = {
    "id": 399444496,
    "run_id": 29679449,
    "run_url": "https://api.github.com/repos/octo-org/octo-repo/actions/runs/29679449",
    "head_sha": "f83a356604ae3c5d03e1b46ef4d1ca77d64a90b0",
    "html_url": "https://github.com/octo-org/octo-repo/runs/29679449/jobs/399444496",
    "status": "completed",
    "conclusion": "failure",
    "started_at": "2020-01-20T17:42:40Z",
    "completed_at": "2020-01-20T17:44:39Z",
    "name": "build",
    "run_attempt": 1,
    "steps": [
        {"name": "Set up job", "status": "completed", "conclusion": "success", "number": 1},
        {"name": "Run Tests", "status": "completed", "conclusion": "failure", "number": 7},
        {"name": "Deploy to Heroku", "status": "completed", "conclusion": "skipped", "number": 8},
    ],
}
# The Location of GitHub's documented 302 for a job's logs (a signed URL on another host).
SIGNED_LOG = (
    "https://pipelines.actions.githubusercontent.com/ab1f3cCFPB34Nd6imvFxpGZH5hNlDp2wijMwl2gDoO0bcrrlJj"
    "/_apis/pipelines/1/jobs/19/signedlogcontent?urlExpires=2020-01-22T22%3A44%3A54.1389777Z"
    "&urlSigningMethod=HMACV1&urlSignature=2TUDfIg4fm36OJmfPy6km5QD5DLCOkBVzvhWZM8B%2BUY%3D"
)
SIGNED_QUERY = {
    "urlExpires": "2020-01-22T22:44:54.1389777Z",
    "urlSigningMethod": "HMACV1",
    "urlSignature": "2TUDfIg4fm36OJmfPy6km5QD5DLCOkBVzvhWZM8B+UY=",
}
LOG_TEXT = (
    "\ufeff2020-01-20T17:42:40.1Z ##[group]Run bundle exec rspec\n"
    "2020-01-20T17:44:38.0Z Failures: 1) Widget renders\n"
    "2020-01-20T17:44:38.1Z 1 example, 1 failure\n"
    "2020-01-20T17:44:38.2Z ##[error]Process completed with exit code 1.\n"
)

CASES = [
    Case(
        "github_list_prs",
        {"owner": "octocat", "repo": "Hello-World", "perPage": 2, "page": 2},
        [
            Call(
                "GET",
                f"{REPO}/pulls",
                {"state": "open", "per_page": 2, "page": 2},
                json=None,
                response=[PR],
                headers=LINK_NEXT,
            )
        ],
        {"pullRequests": [PR_SHAPED], "nextPage": 3},
    ),
    Case(
        "github_create_pr",
        {
            "owner": "octocat",
            "repo": "Hello-World",
            "title": "Amazing new feature",
            "head": "new-topic",
            "base": "master",
            "body": "Please pull these awesome changes in!",
        },
        [
            Call(
                "POST",
                f"{REPO}/pulls",
                json={
                    "title": "Amazing new feature",
                    "head": "new-topic",
                    "base": "master",
                    "body": "Please pull these awesome changes in!",
                    "draft": False,
                },
                response=PR,
                status=201,
            )
        ],
        PR_SHAPED,
    ),
    Case(
        "github_get_pr",
        {"owner": "octocat", "repo": "Hello-World", "number": 1347},
        [Call("GET", f"{REPO}/pulls/1347", response=PR)],
        {
            **PR_SHAPED,
            "merged": False,
            "mergeable": True,
            "mergeable_state": "clean",
            "commits": 3,
            "additions": 100,
            "deletions": 3,
            "changed_files": 5,
            "body": "Please pull these awesome changes in!",
        },
    ),
    Case(
        "github_list_pr_files",
        {"owner": "octocat", "repo": "Hello-World", "number": 1347},
        [
            Call(
                "GET",
                f"{REPO}/pulls/1347/files",
                {"per_page": 30, "page": 1},
                response=[
                    {
                        "sha": "bbcd538c8e72b8c175046e27cc8f907076331401",
                        "filename": "file1.txt",
                        "status": "added",
                        "additions": 103,
                        "deletions": 21,
                        "changes": 124,
                        "patch": "@@ -132,7 +132,7 @@ module Test @@ -1000,7 +1000,7 @@ module Test",
                    }
                ],
            )
        ],
        {
            "files": [
                {
                    "filename": "file1.txt",
                    "status": "added",
                    "additions": 103,
                    "deletions": 21,
                    "changes": 124,
                    "patch": "@@ -132,7 +132,7 @@ module Test @@ -1000,7 +1000,7 @@ module Test",
                }
            ],
            "nextPage": None,
        },
    ),
    Case(
        "github_get_pr_diff",
        {"owner": "octocat", "repo": "Hello-World", "number": 1347},
        [
            Call(
                "GET",
                f"{REPO}/pulls/1347",
                response="diff --git a/file1.txt b/file1.txt\n--- a/file1.txt\n+++ b/file1.txt\n@@ -1 +1 @@\n-a\n+b\n",
                headers={"content-type": "text/plain; charset=utf-8"},
                expect_headers={"accept": "application/vnd.github.diff"},
            )
        ],
        {
            "diff": "diff --git a/file1.txt b/file1.txt\n--- a/file1.txt\n+++ b/file1.txt\n@@ -1 +1 @@\n-a\n+b\n"
        },
    ),
    Case(
        "github_list_releases",
        {"owner": "octocat", "repo": "Hello-World", "perPage": 1},
        [
            Call(
                "GET",
                f"{REPO}/releases",
                {"per_page": 1, "page": 1},
                response=[
                    {
                        "url": f"{REPO}/releases/1",
                        "html_url": "https://github.com/octocat/Hello-World/releases/v1.0.0",
                        "id": 1,
                        "author": USER,
                        "tag_name": "v1.0.0",
                        "target_commitish": "master",
                        "name": "v1.0.0",
                        "body": "Description of the release",
                        "draft": False,
                        "prerelease": False,
                        "created_at": "2013-02-27T19:35:32Z",
                        "published_at": "2013-02-27T19:35:32Z",
                        "assets": [],
                    }
                ],
                headers=LINK_NEXT,
            )
        ],
        {
            "releases": [
                {
                    "id": 1,
                    "tag_name": "v1.0.0",
                    "name": "v1.0.0",
                    "draft": False,
                    "prerelease": False,
                    "published_at": "2013-02-27T19:35:32Z",
                    "html_url": "https://github.com/octocat/Hello-World/releases/v1.0.0",
                    "author_login": "octocat",
                    "body": "Description of the release",
                }
            ],
            "nextPage": 3,
        },
    ),
    Case(
        "github_merge_pr",
        {
            "owner": "octocat",
            "repo": "Hello-World",
            "number": 1347,
            "method": "squash",
            "commitTitle": "Expand enum",
        },
        [
            Call(
                "PUT",
                f"{REPO}/pulls/1347/merge",
                json={"merge_method": "squash", "commit_title": "Expand enum"},
                response={
                    "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
                    "merged": True,
                    "message": "Pull Request successfully merged",
                },
            )
        ],
        {
            "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
            "merged": True,
            "message": "Pull Request successfully merged",
        },
    ),
    Case(
        "github_review_pr",
        {"owner": "octocat", "repo": "Hello-World", "number": 12, "event": "APPROVE", "body": "LGTM"},
        [
            Call(
                "POST",
                f"{REPO}/pulls/12/reviews",
                json={"event": "APPROVE", "body": "LGTM"},
                response={
                    "id": 80,
                    "user": USER,
                    "body": "LGTM",
                    "state": "APPROVED",
                    "html_url": "https://github.com/octocat/Hello-World/pull/12#pullrequestreview-80",
                    "submitted_at": "2019-11-17T17:43:43Z",
                },
            )
        ],
        {
            "id": 80,
            "state": "APPROVED",
            "html_url": "https://github.com/octocat/Hello-World/pull/12#pullrequestreview-80",
            "user_login": "octocat",
            "submitted_at": "2019-11-17T17:43:43Z",
        },
    ),
    Case(
        "github_list_issues",
        {"owner": "octocat", "repo": "Hello-World", "labels": "bug", "state": "all"},
        [
            Call(
                "GET",
                f"{REPO}/issues",
                {"state": "all", "labels": "bug", "per_page": 30, "page": 1},
                response=[ISSUE, {**ISSUE, "number": 1348, "pull_request": {"url": "x"}}],
            )
        ],
        {"issues": [ISSUE_SHAPED, {**ISSUE_SHAPED, "number": 1348, "isPullRequest": True}], "nextPage": None},
    ),
    Case(
        "github_get_issue",
        {"owner": "octocat", "repo": "Hello-World", "number": 1347},
        [Call("GET", f"{REPO}/issues/1347", response=ISSUE)],
        {**ISSUE_SHAPED, "body": "I'm having a problem with this."},
    ),
    Case(
        "github_create_issue",
        {
            "owner": "octocat",
            "repo": "Hello-World",
            "title": "Found a bug",
            "body": "I'm having a problem with this.",
            "assignees": ["octocat"],
            "labels": ["bug"],
        },
        [
            Call(
                "POST",
                f"{REPO}/issues",
                json={
                    "title": "Found a bug",
                    "body": "I'm having a problem with this.",
                    "assignees": ["octocat"],
                    "labels": ["bug"],
                },
                response=ISSUE,
                status=201,
            )
        ],
        ISSUE_SHAPED,
    ),
    Case(
        "github_update_issue",
        {
            "owner": "octocat",
            "repo": "Hello-World",
            "number": 1347,
            "state": "closed",
            "stateReason": "completed",
        },
        [
            Call(
                "PATCH",
                f"{REPO}/issues/1347",
                json={"state": "closed", "state_reason": "completed"},
                response={**ISSUE, "state": "closed"},
            )
        ],
        {**ISSUE_SHAPED, "state": "closed"},
    ),
    Case(
        "github_comment_issue",
        {"owner": "octocat", "repo": "Hello-World", "number": 1347, "body": "Me too"},
        [
            Call(
                "POST",
                f"{REPO}/issues/1347/comments",
                json={"body": "Me too"},
                status=201,
                response={
                    "id": 1,
                    "body": "Me too",
                    "user": USER,
                    "html_url": "https://github.com/octocat/Hello-World/issues/1347#issuecomment-1",
                    "created_at": "2011-04-14T16:00:49Z",
                },
            )
        ],
        {
            "id": 1,
            "html_url": "https://github.com/octocat/Hello-World/issues/1347#issuecomment-1",
            "user_login": "octocat",
            "created_at": "2011-04-14T16:00:49Z",
        },
    ),
    Case(
        "github_search_issues",
        {"q": "windows label:bug language:python state:open", "perPage": 1},
        [
            Call(
                "GET",
                f"{API}/search/issues",
                {"q": "windows label:bug language:python state:open", "per_page": 1, "page": 1},
                response={"total_count": 280, "incomplete_results": False, "items": [ISSUE]},
                headers={"link": f'<{API}/search/issues?q=windows&page=2>; rel="next"'},
            )
        ],
        {
            "totalCount": 280,
            "items": [{**ISSUE_SHAPED, "repository_url": "https://api.github.com/repos/octocat/Hello-World"}],
            "nextPage": 2,
        },
    ),
    Case(
        "github_list_repos",
        {"visibility": "private", "perPage": 5},
        [
            Call(
                "GET",
                f"{API}/user/repos",
                {"sort": "updated", "visibility": "private", "per_page": 5, "page": 1},
                response=[REPO_BODY],
            )
        ],
        {"repositories": [REPO_SHAPED], "nextPage": None},
    ),
    Case(
        "github_get_repo",
        {"owner": "octocat", "repo": "Hello-World"},
        [Call("GET", REPO, response=REPO_BODY)],
        {
            **REPO_SHAPED,
            "forks_count": 9,
            "topics": ["octocat", "atom", "electron", "api"],
            "archived": False,
        },
    ),
    Case(
        "github_list_branches",
        {"owner": "octocat", "repo": "Hello-World"},
        [
            Call(
                "GET",
                f"{REPO}/branches",
                {"per_page": 30, "page": 1},
                response=[
                    {
                        "name": "master",
                        "commit": {"sha": "c5b97d5ae6c19d5c5df71a34c7fbeeda2479ccbc", "url": "x"},
                        "protected": True,
                    }
                ],
            )
        ],
        {
            "branches": [
                {
                    "name": "master",
                    "commit_sha": "c5b97d5ae6c19d5c5df71a34c7fbeeda2479ccbc",
                    "protected": True,
                }
            ],
            "nextPage": None,
        },
    ),
    Case(
        "github_list_commits",
        {"owner": "octocat", "repo": "Hello-World", "sha": "master", "path": "README"},
        [
            Call(
                "GET",
                f"{REPO}/commits",
                {"sha": "master", "path": "README", "per_page": 30, "page": 1},
                response=[
                    {
                        "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
                        "html_url": "https://github.com/octocat/Hello-World/commit/6dcb09b5b57875f334f61aebed695e2e4193db5e",
                        "commit": {
                            "author": {
                                "name": "Monalisa Octocat",
                                "email": "support@github.com",
                                "date": "2011-04-14T16:00:49Z",
                            },
                            "message": "Fix all the bugs",
                        },
                        "author": USER,
                    }
                ],
            )
        ],
        {
            "commits": [
                {
                    "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
                    "message": "Fix all the bugs",
                    "commit_author_name": "Monalisa Octocat",
                    "commit_author_date": "2011-04-14T16:00:49Z",
                    "author_login": "octocat",
                    "html_url": "https://github.com/octocat/Hello-World/commit/6dcb09b5b57875f334f61aebed695e2e4193db5e",
                }
            ],
            "nextPage": None,
        },
    ),
    Case(
        "github_get_file",
        {"owner": "octocat", "repo": "Hello-World", "path": "README.md", "ref": "main"},
        [
            Call(
                "GET",
                f"{REPO}/contents/README.md",
                {"ref": "main"},
                response={
                    "type": "file",
                    "encoding": "base64",
                    "size": len(FILE_TEXT),
                    "name": "README.md",
                    "path": "README.md",
                    "sha": "3d21ec53a331a6f037a91c368710b99387d012c1",
                    "html_url": "https://github.com/octocat/Hello-World/blob/main/README.md",
                    # GitHub wraps the base64 at 60 characters
                    "content": base64.encodebytes(FILE_TEXT.encode()).decode(),
                },
            )
        ],
        {
            "type": "file",
            "path": "README.md",
            "sha": "3d21ec53a331a6f037a91c368710b99387d012c1",
            "size": len(FILE_TEXT),
            "html_url": "https://github.com/octocat/Hello-World/blob/main/README.md",
            "content": FILE_TEXT,
        },
    ),
    Case(
        "github_search_code",
        {"q": "addClass in:file language:js repo:jquery/jquery"},
        [
            Call(
                "GET",
                f"{API}/search/code",
                {"q": "addClass in:file language:js repo:jquery/jquery", "per_page": 30, "page": 1},
                response={
                    "total_count": 7,
                    "incomplete_results": False,
                    "items": [
                        {
                            "name": "classes.js",
                            "path": "src/attributes/classes.js",
                            "sha": "d7212f9dee2dcc18f084d7df8f417b80846ded5a",
                            "html_url": "https://github.com/jquery/jquery/blob/825ac37/src/attributes/classes.js",
                            "repository": {"full_name": "jquery/jquery"},
                            "score": 1,
                        }
                    ],
                },
            )
        ],
        {
            "totalCount": 7,
            "items": [
                {
                    "name": "classes.js",
                    "path": "src/attributes/classes.js",
                    "repository_full_name": "jquery/jquery",
                    "html_url": "https://github.com/jquery/jquery/blob/825ac37/src/attributes/classes.js",
                }
            ],
            "nextPage": None,
        },
    ),
]


COMMENT = {
    "id": 1,
    "body": "Me too",
    "user": USER,
    "html_url": "https://github.com/octocat/Hello-World/issues/1347#issuecomment-1",
    "created_at": "2011-04-14T16:00:49Z",
    "updated_at": "2011-04-14T16:00:49Z",
}
REVIEW_COMMENT = {
    "id": 10,
    "pull_request_review_id": 42,
    "diff_hunk": "@@ -16,33 +16,40 @@ public class Connection : IConnection...",
    "path": "file1.txt",
    "commit_id": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
    "user": USER,
    "body": "Great stuff!",
    "created_at": "2011-04-14T16:00:49Z",
    "html_url": "https://github.com/octocat/Hello-World/pull/1#discussion-diff-1",
    "line": 2,
    "side": "RIGHT",
}
REVIEW_COMMENT_SHAPED = {
    "id": 10,
    "pull_request_review_id": 42,
    "in_reply_to_id": None,
    "user_login": "octocat",
    "path": "file1.txt",
    "line": 2,
    "side": "RIGHT",
    "commit_id": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
    "created_at": "2011-04-14T16:00:49Z",
    "html_url": "https://github.com/octocat/Hello-World/pull/1#discussion-diff-1",
    "body": "Great stuff!",
    "diff_hunk": "@@ -16,33 +16,40 @@ public class Connection : IConnection...",
}
RUN = {
    "id": 30433642,
    "name": "Build",
    "display_title": "Update README.md",
    "head_branch": "master",
    "head_sha": "acb5820ced9479c074f688cc328bf03f341a511d",
    "run_number": 562,
    "event": "push",
    "status": "completed",
    "conclusion": "failure",
    "workflow_id": 159038,
    "run_attempt": 1,
    "html_url": "https://github.com/octo-org/octo-repo/actions/runs/30433642",
    "created_at": "2020-01-22T19:33:08Z",
    "updated_at": "2020-01-22T19:33:08Z",
}
RUN_SHAPED = {
    k: RUN[k]
    for k in (
        "id",
        "name",
        "display_title",
        "status",
        "conclusion",
        "event",
        "head_branch",
        "head_sha",
        "run_number",
        "run_attempt",
        "html_url",
        "created_at",
        "updated_at",
    )
}

CASES += [
    Case(
        "github_list_comments",
        {"owner": "octocat", "repo": "Hello-World", "number": 1347, "since": "2011-04-01T00:00:00Z"},
        [
            Call(
                "GET",
                f"{REPO}/issues/1347/comments",
                {"since": "2011-04-01T00:00:00Z", "per_page": 30, "page": 1},
                response=[COMMENT],
                headers={"link": f'<{REPO}/issues/1347/comments?page=2>; rel="next"'},
            )
        ],
        {
            "comments": [
                {
                    "id": 1,
                    "user_login": "octocat",
                    "created_at": "2011-04-14T16:00:49Z",
                    "updated_at": "2011-04-14T16:00:49Z",
                    "html_url": "https://github.com/octocat/Hello-World/issues/1347#issuecomment-1",
                    "body": "Me too",
                }
            ],
            "nextPage": 2,
        },
    ),
    Case(
        "github_list_pr_reviews",
        {"owner": "octocat", "repo": "Hello-World", "number": 12},
        [
            Call(
                "GET",
                f"{REPO}/pulls/12/reviews",
                {"per_page": 30, "page": 1},
                response=[
                    {
                        "id": 80,
                        "user": USER,
                        "body": "Here is the body for the review.",
                        "state": "APPROVED",
                        "html_url": "https://github.com/octocat/Hello-World/pull/12#pullrequestreview-80",
                        "submitted_at": "2019-11-17T17:43:43Z",
                        "commit_id": "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091",
                    }
                ],
            )
        ],
        {
            "reviews": [
                {
                    "id": 80,
                    "user_login": "octocat",
                    "state": "APPROVED",
                    "submitted_at": "2019-11-17T17:43:43Z",
                    "commit_id": "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091",
                    "html_url": "https://github.com/octocat/Hello-World/pull/12#pullrequestreview-80",
                    "body": "Here is the body for the review.",
                }
            ],
            "nextPage": None,
        },
    ),
    Case(
        "github_list_pr_review_comments",
        {"owner": "octocat", "repo": "Hello-World", "number": 1, "perPage": 50},
        [Call("GET", f"{REPO}/pulls/1/comments", {"per_page": 50, "page": 1}, response=[REVIEW_COMMENT])],
        {"comments": [REVIEW_COMMENT_SHAPED], "nextPage": None},
    ),
    Case(
        "github_add_pr_review_comment",
        {
            "owner": "octocat",
            "repo": "Hello-World",
            "number": 1,
            "body": "Great stuff!",
            "commitId": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
            "path": "file1.txt",
            "line": 2,
        },
        [
            Call(
                "POST",
                f"{REPO}/pulls/1/comments",
                json={
                    "body": "Great stuff!",
                    "commit_id": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
                    "path": "file1.txt",
                    "line": 2,
                    "side": "RIGHT",
                },
                status=201,
                response=REVIEW_COMMENT,
            )
        ],
        REVIEW_COMMENT_SHAPED,
    ),
    Case(
        "github_create_or_update_file",
        {
            "owner": "octocat",
            "repo": "Hello-World",
            "path": "notes/hello.txt",
            "content": "my new file contents",
            "message": "my commit message",
            "branch": "docs",
            "sha": "95b966ae1c166bd92f8ae7d1c313e738c731dfc3",
        },
        [
            Call(
                "PUT",
                f"{REPO}/contents/notes/hello.txt",
                json={
                    "message": "my commit message",
                    "content": "bXkgbmV3IGZpbGUgY29udGVudHM=",
                    "branch": "docs",
                    "sha": "95b966ae1c166bd92f8ae7d1c313e738c731dfc3",
                },
                response={
                    "content": {
                        "name": "hello.txt",
                        "path": "notes/hello.txt",
                        "sha": "a56507ed892d05a37c6d6128c260937ea4d287bd",
                        "html_url": "https://github.com/octocat/Hello-World/blob/docs/notes/hello.txt",
                    },
                    "commit": {
                        "sha": "18a43cd8e1e3a79c786e3d808a73d23b6d212b16",
                        "html_url": "https://github.com/octocat/Hello-World/git/commit/18a43cd8e1e3a79c786e3d808a73d23b6d212b16",
                        "message": "my commit message",
                    },
                },
            )
        ],
        {
            "path": "notes/hello.txt",
            "sha": "a56507ed892d05a37c6d6128c260937ea4d287bd",
            "html_url": "https://github.com/octocat/Hello-World/blob/docs/notes/hello.txt",
            "commit": {
                "sha": "18a43cd8e1e3a79c786e3d808a73d23b6d212b16",
                "html_url": "https://github.com/octocat/Hello-World/git/commit/18a43cd8e1e3a79c786e3d808a73d23b6d212b16",
            },
        },
    ),
    Case(
        "github_create_branch",
        {"owner": "octocat", "repo": "Hello-World", "branch": "fix/typo"},
        [
            Call("GET", REPO, response=REPO_BODY),
            Call(
                "GET",
                f"{REPO}/git/ref/heads/master",
                response={
                    "ref": "refs/heads/master",
                    "object": {"type": "commit", "sha": "aa218f56b14c9653891f9e74264a383fa43fefbd"},
                },
            ),
            Call(
                "POST",
                f"{REPO}/git/refs",
                json={"ref": "refs/heads/fix/typo", "sha": "aa218f56b14c9653891f9e74264a383fa43fefbd"},
                status=201,
                response={
                    "ref": "refs/heads/fix/typo",
                    "object": {"type": "commit", "sha": "aa218f56b14c9653891f9e74264a383fa43fefbd"},
                },
            ),
        ],
        {
            "branch": "fix/typo",
            "ref": "refs/heads/fix/typo",
            "sha": "aa218f56b14c9653891f9e74264a383fa43fefbd",
        },
    ),
    Case(
        "github_list_workflow_runs",
        {
            "owner": "octocat",
            "repo": "Hello-World",
            "workflow": "ci.yml",
            "branch": "master",
            "status": "failure",
        },
        [
            Call(
                "GET",
                f"{REPO}/actions/workflows/ci.yml/runs",
                {"branch": "master", "status": "failure", "per_page": 30, "page": 1},
                response={"total_count": 1, "workflow_runs": [RUN]},
            )
        ],
        {"totalCount": 1, "runs": [RUN_SHAPED], "nextPage": None},
    ),
    Case(
        "github_rerun_workflow_run",
        {"owner": "octocat", "repo": "Hello-World", "runId": 30433642, "onlyFailed": True},
        [Call("POST", f"{REPO}/actions/runs/30433642/rerun-failed-jobs", status=201, response={})],
        {"runId": 30433642, "rerunRequested": True, "onlyFailed": True},
    ),
    Case(
        "github_list_workflow_jobs",
        {"owner": "octocat", "repo": "Hello-World", "runId": 29679449},
        [
            Call(
                "GET",
                f"{REPO}/actions/runs/29679449/jobs",
                {"filter": "latest", "per_page": 30, "page": 1},
                response={"total_count": 1, "jobs": [JOB]},
            )
        ],
        {
            "totalCount": 1,
            "jobs": [
                {
                    "id": 399444496,
                    "name": "build",
                    "status": "completed",
                    "conclusion": "failure",
                    "run_attempt": 1,
                    "started_at": "2020-01-20T17:42:40Z",
                    "completed_at": "2020-01-20T17:44:39Z",
                    "html_url": "https://github.com/octo-org/octo-repo/runs/29679449/jobs/399444496",
                    "failedSteps": ["Run Tests"],
                }
            ],
            "nextPage": None,
        },
    ),
    Case(
        "github_get_job_logs",
        {"owner": "octocat", "repo": "Hello-World", "jobId": 399444496, "tailLines": 2},
        [
            Call("GET", f"{REPO}/actions/jobs/399444496/logs", status=302, headers={"location": SIGNED_LOG}),
            Call(
                "GET",
                SIGNED_LOG.split("?")[0],
                SIGNED_QUERY,
                response=LOG_TEXT,
                headers={"content-type": "text/plain"},
                auth=None,
                presigned=True,
                expect_headers={"accept": "text/plain"},
            ),
        ],
        {
            "lines": 2,
            "totalLines": 4,
            "truncated": True,
            "log": "…[2 earlier lines left out]\n"
            "2020-01-20T17:44:38.1Z 1 example, 1 failure\n"
            "2020-01-20T17:44:38.2Z ##[error]Process completed with exit code 1.\n",
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    from workbench_plugins.github.tools import TOOLS

    assert sorted(t.name for t in TOOLS) == sorted(c.tool for c in CASES)


def test_catalog_entries_are_well_formed() -> None:
    check_catalog("github", github_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool_request_and_result(tmp_path: Path, case: Case) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_directory_listing(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_get_file",
        {"owner": "octocat", "repo": "Hello-World", "path": "src"},
        [
            Call(
                "GET",
                f"{REPO}/contents/src",
                response=[
                    {
                        "type": "file",
                        "size": 625,
                        "name": "octokit.rb",
                        "path": "lib/octokit.rb",
                        "sha": "fff6",
                    },
                    {"type": "dir", "size": 0, "name": "octokit", "path": "lib/octokit", "sha": "a84d"},
                ],
            )
        ],
    )
    assert out == {
        "results": [
            {
                "result": {
                    "type": "dir",
                    "entries": [
                        {"name": "octokit.rb", "path": "lib/octokit.rb", "type": "file", "size": 625},
                        {"name": "octokit", "path": "lib/octokit", "type": "dir", "size": 0},
                    ],
                }
            }
        ]
    }


async def test_upstream_404_becomes_tool_error(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_get_repo",
        {"owner": "octocat", "repo": "nope"},
        [
            Call(
                "GET",
                f"{API}/repos/octocat/nope",
                status=404,
                response={"message": "Not Found", "documentation_url": "https://docs.github.com/rest"},
            )
        ],
    )
    assert out == {"results": [{"error": "github API error 404: Not Found"}]}


def _big_file_meta(size: int) -> dict[str, object]:
    # What GitHub answers for a file of 1-100 MB: metadata, empty content, encoding "none".
    return {
        "type": "file",
        "encoding": "none",
        "size": size,
        "name": "data.csv",
        "path": "data/data.csv",
        "content": "",
        "sha": "aa11",
        "html_url": "https://github.com/octocat/Hello-World/blob/main/data/data.csv",
    }


RAW = {"accept": "application/vnd.github.raw+json"}


async def test_file_over_one_megabyte_is_read_raw_and_cut(tmp_path: Path) -> None:
    size = 3_000_000
    body = ("é,1\n" * (size // 5 + 1)).encode()[:size]
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_get_file",
        {"owner": "octocat", "repo": "Hello-World", "path": "data/data.csv", "ref": "main"},
        [
            Call("GET", f"{REPO}/contents/data/data.csv", {"ref": "main"}, response=_big_file_meta(size)),
            Call(
                "GET",
                f"{REPO}/contents/data/data.csv",
                {"ref": "main"},
                response=body.decode(),
                expect_headers=RAW,
            ),
        ],
    )
    result = out["results"][0]["result"]
    assert result["size"] == size and "binary" not in result
    assert (
        result["content"]
        == "é,1\n" * 12_500 + f"\n…[truncated: first 50000 characters of a {size}-byte file]"
    )


async def test_file_over_one_megabyte_that_is_binary_says_so(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_get_file",
        {"owner": "octocat", "repo": "Hello-World", "path": "data/data.csv"},
        [
            Call("GET", f"{REPO}/contents/data/data.csv", response=_big_file_meta(2_000_000)),
            Call(
                "GET",
                f"{REPO}/contents/data/data.csv",
                response="PK\x03\x04\x00\x00binary",
                expect_headers=RAW,
            ),
        ],
    )
    result = out["results"][0]["result"]
    assert result["content"] is None and result["binary"] is True


async def test_small_binary_file_says_so(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_get_file",
        {"owner": "octocat", "repo": "Hello-World", "path": "logo.png"},
        [
            Call(
                "GET",
                f"{REPO}/contents/logo.png",
                response={
                    "type": "file",
                    "encoding": "base64",
                    "size": 6,
                    "path": "logo.png",
                    "sha": "bb22",
                    "content": base64.b64encode(b"\x89PNG\xff\xfe").decode(),
                },
            )
        ],
    )
    result = out["results"][0]["result"]
    assert result["content"] is None and result["binary"] is True


async def test_review_comment_reply_and_missing_position(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_add_pr_review_comment",
        {"owner": "octocat", "repo": "Hello-World", "number": 1, "body": "Done", "inReplyTo": 10},
        [
            Call(
                "POST",
                f"{REPO}/pulls/1/comments/10/replies",
                json={"body": "Done"},
                status=201,
                response={**REVIEW_COMMENT, "id": 11, "in_reply_to_id": 10, "body": "Done"},
            )
        ],
    )
    assert out == {
        "results": [{"result": {**REVIEW_COMMENT_SHAPED, "id": 11, "in_reply_to_id": 10, "body": "Done"}}]
    }
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_add_pr_review_comment",
        {"owner": "o", "repo": "r", "number": 1, "body": "x"},
        [],
    )
    assert out == {
        "results": [{"error": "Give commitId, path and line to comment on the diff, or inReplyTo to reply."}]
    }


async def test_create_or_update_file_refuses_more_than_a_megabyte(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_create_or_update_file",
        {"owner": "o", "repo": "r", "path": "big.txt", "content": "é" * 500_001, "message": "m"},
        [],
    )
    assert out == {
        "results": [{"error": "content is 1000002 bytes; this tool writes files of at most 1000000 bytes."}]
    }


async def test_create_branch_from_a_named_branch_or_a_sha(tmp_path: Path) -> None:
    ref = {"ref": "refs/heads/b", "object": {"sha": "cafe"}}
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_create_branch",
        {"owner": "octocat", "repo": "Hello-World", "branch": "b", "fromSha": "cafe"},
        [
            Call(
                "POST",
                f"{REPO}/git/refs",
                json={"ref": "refs/heads/b", "sha": "cafe"},
                status=201,
                response=ref,
            )
        ],
    )
    assert out == {"results": [{"result": {"branch": "b", "ref": "refs/heads/b", "sha": "cafe"}}]}
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_create_branch",
        {"owner": "octocat", "repo": "Hello-World", "branch": "b", "fromBranch": "dev"},
        [
            Call(
                "GET",
                f"{REPO}/git/ref/heads/dev",
                response={"ref": "refs/heads/dev", "object": {"sha": "beef"}},
            ),
            Call(
                "POST",
                f"{REPO}/git/refs",
                json={"ref": "refs/heads/b", "sha": "beef"},
                status=201,
                response=ref,
            ),
        ],
    )
    assert out["results"][0]["result"]["branch"] == "b"


async def test_rerun_all_jobs(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_rerun_workflow_run",
        {"owner": "octocat", "repo": "Hello-World", "runId": 5},
        [Call("POST", f"{REPO}/actions/runs/5/rerun", status=201)],
    )
    assert out == {"results": [{"result": {"runId": 5, "rerunRequested": True, "onlyFailed": False}}]}


LOGS = f"{REPO}/actions/jobs/399444496/logs"
LOG_ARGS = {"owner": "octocat", "repo": "Hello-World", "jobId": 399444496}


async def test_job_logs_never_follow_to_a_private_address(tmp_path: Path) -> None:
    """The log's signed URL goes through the egress guard: a Location pointing at the metadata
    service or loopback is refused before any request is made to it."""
    for target in ("https://169.254.169.254/latest/meta-data/", "https://127.0.0.1:8787/t/x/mcp"):
        out = await run_tool(
            PLUGIN,
            tmp_path,
            "github_get_job_logs",
            LOG_ARGS,
            [Call("GET", LOGS, status=302, headers={"location": target})],
        )
        error = out["results"][0]["error"]
        assert "refused" in error.lower() or "not allowed" in error.lower(), error
        assert "tok-" not in error


async def test_job_logs_refuse_a_plain_http_location(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_get_job_logs",
        LOG_ARGS,
        [
            Call(
                "GET",
                LOGS,
                status=302,
                headers={"location": "http://pipelines.actions.githubusercontent.com/x"},
            )
        ],
    )
    assert out == {"results": [{"error": "GitHub did not give an https address for the job's log."}]}


async def test_an_expired_log_url_is_the_providers_error(tmp_path: Path) -> None:
    signed = "https://results-receiver.actions.githubusercontent.com/log?sig=abc"
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_get_job_logs",
        LOG_ARGS,
        [
            Call("GET", LOGS, status=302, headers={"location": signed}),
            Call(
                "GET",
                signed.split("?")[0],
                {"sig": "abc"},
                status=403,
                response="<Error><Code>AuthenticationFailed</Code></Error>",
                auth=None,
                presigned=True,
            ),
        ],
    )
    assert out == {
        "results": [{"error": "github API error 403: <Error><Code>AuthenticationFailed</Code></Error>"}]
    }


async def test_a_log_larger_than_the_bound_is_read_only_up_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endless log: the tool stops reading at MAX_LOG_BYTES and says the log was cut."""
    monkeypatch.setattr(github_tools, "MAX_LOG_BYTES", 64 * 1024)
    sent: list[int] = []
    signed = "https://pipelines.actions.githubusercontent.com/signedlogcontent?sig=1"

    async def endless():  # type: ignore[no-untyped-def]
        for i in range(10_000):
            sent.append(i)
            yield f"{i:08d} line of a very long build log\n".encode() * 100

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.github.com":
            return httpx.Response(302, headers={"location": signed})
        assert "authorization" not in request.headers
        return httpx.Response(200, content=endless(), headers={"content-type": "text/plain"})

    gw = make_gateway(tmp_path, transport=httpx.MockTransport(handler))
    principal = principal_for(gw)
    gw.credentials.save(principal.user.id, "github", PLUGIN.credential)
    out = await gw.runs.execute(
        principal, [{"tool": "github_get_job_logs", "args": {**LOG_ARGS, "tailLines": 3}, "ref_id": None}]
    )
    result = out["results"][0]["result"]
    assert len(sent) < 30  # 3.7 KB a chunk: read to 64 KB and stopped, not 37 MB
    assert result["truncated"] is True and result["totalLines"] is None and result["lines"] == 3
    assert result["log"].startswith("…[the log is longer than 65536 bytes: only its start was read; ")
    assert result["log"].count("\n") == 3 + 1


async def test_a_long_last_line_is_cut_from_its_start(tmp_path: Path) -> None:
    text = "first\n" + "x" * 70_000 + "\n"
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "github_get_job_logs",
        {**LOG_ARGS, "tailLines": 1},
        [Call("GET", LOGS, response=text, headers={"content-type": "text/plain"})],
    )
    result = out["results"][0]["result"]
    assert result["lines"] == 1 and result["totalLines"] == 2 and result["truncated"] is True
    assert result["log"] == (
        "…[1 earlier lines left out; 10001 characters of the first lines shown left out]\n"
        + "x" * 59_999
        + "\n"
    )
