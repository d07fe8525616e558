"""What a caller can find: the tool search, one tool's schema, the list of integrations.

The shared catalog (built-in and plugin tools) is searched through the index the layer ships
prebuilt (workbench.engine.catalog_index), so no tools module is imported to search; a caller's
custom apps are ranked alongside it and are never shown to another user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.engine.executor import Engine
    from workbench.engine.index_cache import IndexCache
    from workbench.engine.registry import Registry
    from workbench.engine.search import SearchHit, SearchIndex
    from workbench.external import ExternalServers
    from workbench.identity.auth import KeyRecheck, Principal
    from workbench.identity.grants import Grant
    from workbench.manifest import Manifest
    from workbench.services.connections import ConnectionService
    from workbench.tools import Tool

__all__ = ["CatalogService"]

_WEAK = 0.3  # engine.semantic.WEAK: a top score under it is in the no-match band


def _rank(hit: SearchHit) -> tuple[bool, float]:
    """The order of a search's answer: tools of an integration the query names first, then by score."""
    return (not hit.named, -hit.score)


def _grant_offers(grant: Grant, name: str, integration: str, annotations: Mapping[str, Any]) -> bool:
    from workbench.annotations import is_read_only

    return grant.refusal(name, integration, is_read_only(annotations), "", "") is None


class CatalogService:
    def __init__(
        self,
        *,
        registry: Registry,
        engine: Engine,
        connections: ConnectionService,
        external: Callable[[], ExternalServers | None],
    ) -> None:
        self.registry = registry
        self._engine = engine
        self._connections = connections
        self._external = external  # built on first use (custom apps)

    @cached_property
    def _index(self) -> SearchIndex:
        from workbench.engine import catalog_index
        from workbench.engine.search import SearchIndex, catalog_docs

        # The layer ships the catalog's index prebuilt: no tools module is imported to search.
        prebuilt = catalog_index.load(self.registry)
        index = prebuilt if prebuilt is not None else SearchIndex(catalog_docs(self.registry))
        index.prepare()  # built or loaded on a pool thread: so is what searching it needs
        return index

    def search_index(self) -> SearchIndex:
        return self._index

    def _semantic_search(self, index: SearchIndex, query: str, limit: int) -> list[SearchHit]:
        from workbench.engine import semantic

        vectors = self.__dict__.get("_vectors")
        if vectors is None:
            vectors = self.__dict__["_vectors"] = semantic.load(index.docs)
        return semantic.search(index, vectors, query, limit)

    @cached_property
    def search_indexes(self) -> IndexCache:
        """Custom-app catalogs' indexes, built off the loop within their budgets."""
        from workbench.engine.index_cache import IndexCache

        return IndexCache(self._connections.io)

    async def search_tools(self, principal: Principal, query: str, limit: int) -> list[dict[str, Any]]:
        """search_tools: built-in and plugin tools plus this caller's custom apps (never another user's)."""
        from workbench.engine.search import SearchBudgetExceeded, SearchDoc
        from workbench.observability import log_event
        from workbench.tools import argument_text

        grant = principal.grant
        # A scoped grant: rank the whole catalog, then keep what the grant offers (never a hidden tool).
        wide = limit if grant.is_full else 1000
        # Built (or loaded) on a pool thread the first time, never on the event loop.
        index: SearchIndex | None = self.__dict__.get("_index")
        if index is None:
            index = await self._connections.io.run(self.search_index)
        hits = index.search(query, wide)
        if not hits or hits[0].score < _WEAK:
            from workbench.engine import semantic

            if semantic.needed(query, hits) and semantic.available():
                # No confident match: the multilingual component, on a pool thread (its model loads
                # there once; a confident query never imports even this module).
                hits = await self._connections.io.run(self._semantic_search, index, query, wide)
        if not grant.is_full:
            hits = [h for h in hits if _grant_offers(grant, h.doc.name, h.doc.integration, self._hints(h))]
        # Ranked by the order the merge below keeps (the index's own order, already this one): the
        # shared tools that can still make the cut are these, so only their integrations' stored
        # connections are read, with the custom apps' rows when there are any (one batch read).
        hits = sorted(hits, key=_rank)[:limit]
        stored = self._connections.stored({hit.doc.integration for hit in hits})
        custom_hints: dict[str, dict[str, Any]] = {}
        external = self._external()
        if external is not None:
            found, conns = await external.search_catalog(
                principal.user.id, connections=stored, recheck=principal.recheck
            )
            if principal.recheck is not None:  # settled with that read: redo if the grant changed
                checked = await self._checked(principal.recheck)
                if checked.grant != grant:
                    return await self.search_tools(checked, query, limit)
            custom_hints = {t.name: t.annotations for t in found}
            custom = tuple(
                SearchDoc(t.name, t.description, t.server, arguments=argument_text(t.input_schema))
                for t in found
            )
            if custom:  # ranked alongside the shared catalog
                try:
                    own = await self.search_indexes.get(custom)
                except SearchBudgetExceeded as e:
                    # That catalog is left out of search, said in the log; the rest still answers.
                    log_event("search_index_refused", user=principal.user.id, error=str(e))
                else:
                    theirs = own.search(query, wide)
                    # Vectors as discovered (embedded in the background, where the semantic
                    # component is installed), used as for the shared catalog: when this
                    # catalog's answer is in the no-match band.
                    vectors = self.search_indexes.vectors(custom)
                    if vectors is not None and (not theirs or theirs[0].score < _WEAK):
                        from workbench.engine import semantic

                        theirs = await self._connections.io.run(semantic.search, own, vectors, query, wide)
                    if not grant.is_full:
                        theirs = [
                            h
                            for h in theirs
                            if _grant_offers(
                                grant, h.doc.name, h.doc.integration, self._hints(h, custom_hints)
                            )
                        ]
                    hits = sorted([*hits, *theirs], key=_rank)[:limit]
        else:
            conns = await self._connections.io.run(self._connections.read, principal.user.id, stored)
            if principal.recheck is not None:  # no batch to ride along with: checked on its own
                checked = await self._checked(principal.recheck)
                if checked.grant != grant:
                    return await self.search_tools(checked, query, limit)
        # Only the hit integrations: a cookie integration's check decrypts its stored cookies.
        status = await self._connections.io.run(
            partial(self._connections.status, known=conns),
            principal.user.id,
            {hit.doc.integration for hit in hits},
        )
        return [
            {
                "name": hit.doc.name,
                "description": hit.doc.description,
                "integration": hit.doc.integration,
                "score": hit.score,
                "connected": status.get(hit.doc.integration, True),
                "annotations": self.annotations_of(hit.doc.name, hit.doc.integration, custom_hints),
            }
            for hit in hits
        ]

    async def _checked(self, recheck: KeyRecheck) -> Principal:
        """The caller's key as checked (a read of its own, off the loop, unless a batch carried it)."""
        return recheck.settle() if recheck.settled else await self._connections.io.run(recheck.settle)

    def _hints(self, hit: SearchHit, custom: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        return self.annotations_of(hit.doc.name, hit.doc.integration, custom)

    def annotations_of(
        self, tool_name: str, integration: str, custom: Mapping[str, dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """A tool's MCP annotations without importing its tools module (a plugin's come from its
        manifest; a custom app's from its server, as discovered)."""
        manifest = self.registry.manifest(integration)
        if manifest is not None:
            return manifest.annotations(tool_name)
        return dict((custom or {}).get(tool_name) or {})

    def offers(self, principal: Principal, tool: Tool, manifest: Manifest) -> bool:
        """Whether discovery shows this tool to the caller (what its grant could never run is hidden;
        an approve grant's writes are shown: they run once approved)."""
        if principal.grant.is_full:
            return True
        annotations = tool.annotations if tool.annotations is not None else manifest.annotations(tool.name)
        return _grant_offers(principal.grant, tool.name, manifest.name, annotations)

    def choose_grant(
        self,
        user_id: str,
        *,
        access: str = "full",
        integrations: Iterable[str] | str | None = None,
        denied_tools: Iterable[str] | str | None = None,
    ) -> Grant:
        """A grant as a person chose it (CLI flags, the portal, the consent page): InvalidInput for an
        access level or an integration name that does not exist for this user. Blocking (the user's
        custom apps are read). `integrations` None means all."""
        from workbench.errors import InvalidInput
        from workbench.identity.grants import Grant, parse_names

        names = None if integrations is None else parse_names(integrations)
        if names is not None:
            known = {m.name for m in self.registry.manifests()}
            unknown = [n for n in names if n not in known]
            external = self._external()
            if unknown and external is not None:
                known |= {str(i["name"]) for i in external.integrations(user_id)}
                unknown = [n for n in names if n not in known]
            if unknown:
                raise InvalidInput(
                    f"Unknown integration(s): {', '.join(unknown)} (names as list_integrations gives them)"
                )
        return Grant(access, names, parse_names(denied_tools))

    def grantable(self, user_id: str) -> list[tuple[str, str]]:
        """(name, display name) of every integration the user could grant: plugins, built-ins and
        their custom apps (blocking)."""
        out = [(m.name, m.display_name) for m in self.registry.manifests()]
        external = self._external()
        if external is not None:
            seen = {n for n, _ in out}
            out += [
                (str(i["name"]), str(i["name"]))
                for i in external.integrations(user_id)
                if i["name"] not in seen
            ]
        return out

    async def lookup(self, principal: Principal, name: str) -> tuple[Tool, Manifest] | None:
        """The tool this caller can run under `name` (shared catalog, then their custom apps)."""
        return await self._engine.lookup(principal, name)

    def integrations(self, user_id: str) -> list[dict[str, Any]]:
        """list_integrations: every installed integration with this user's connection status, then
        the user's custom apps and the operator's servers (blocking)."""
        status = self._connections.status(user_id)
        listed = [
            {"name": m.name, "version": m.version, "connected": status[m.name]}
            for m in self.registry.manifests()
        ]
        external = self._external()
        if external is not None:
            listed += external.integrations(user_id)
        return listed
