"""`python -m eval locomo|longmemeval|beir|docs|multihop|all|bench|bench-recovery|extract|
entities|steward|console|startup-load|walk-after-write|falkordb-probe|team-server|failover ...`:
runs an evaluation and writes JSON results."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eval import embedding
from eval.falkordb_graphs import graphs
from graphmem.embeddings.factory import make_embedder


def _write(payload: object, out: Path | None) -> None:
    text = json.dumps(payload, indent=2)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
    print(text)


ALL_SYSTEMS = ["hybrid", "hybrid-nograph", "graph", "bm25", "vector"]
MULTIHOP_SYSTEMS = ["hybrid", "graph", "bm25", "vector"]


def _systems(arg: str) -> list[str]:
    return ALL_SYSTEMS if arg == "all" else arg.split(",")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval")
    sub = parser.add_subparsers(dest="command", required=True)
    loc = sub.add_parser("locomo", help="LoCoMo turn-level evidence recall@5/10/25")
    loc.add_argument("--data", type=Path, default=Path("../shared/bench/locomo/locomo_dev.json"))
    loc.add_argument(
        "--system",
        default="hybrid",
        help="recipe name(s), comma-separated, or 'graph' (hybrid fused with the entity-graph "
        f"walk); 'all' = {','.join(ALL_SYSTEMS)}",
    )
    loc.add_argument("--out", type=Path)
    loc.add_argument("--embedding", default="local", help=embedding.HELP)
    loc.add_argument("--conversations", type=int, help="only the first N conversations")
    loc.add_argument("--questions", type=int, help="only the first N questions of each")
    loc.add_argument("--no-captions", action="store_true", help="leave image captions out")
    loc.add_argument(
        "--falkordb", action="store_true", help="each store on a graph of a FalkorDB server"
    )
    bench = sub.add_parser("bench", help="store rate, recall latency and RSS at N memories")
    bench.add_argument("--memories", type=int, default=10_000)
    bench.add_argument("--queries", type=int, default=200)
    bench.add_argument(
        "--pool", type=int, default=5_000, help="memories embedded here; the rest bring vectors"
    )
    bench.add_argument("--embedding", default="local", help=embedding.HELP)
    bench.add_argument(
        "--falkordb", action="store_true", help="the store on a graph of a FalkorDB server"
    )
    bench.add_argument("--out", type=Path)
    rbench = sub.add_parser(
        "bench-recovery",
        help="what a start reads to find work a crash left: the Pending table vs the old scans",
    )
    rbench.add_argument("--memories", type=int, default=100_000)
    rbench.add_argument("--runs", type=int, default=3, help="new processes timed per read")
    rbench.add_argument("--embedding", default="hash", help=embedding.HELP)
    rbench.add_argument("--out", type=Path)
    kbench = sub.add_parser("bench-knowledge", help="timeline and as-of latency with chains")
    kbench.add_argument("--memories", type=int, default=10_000)
    kbench.add_argument("--chains", type=int, default=2_000)
    kbench.add_argument("--queries", type=int, default=200)
    kbench.add_argument("--embedding", default="local", help=embedding.HELP)
    kbench.add_argument("--out", type=Path)
    dbench = sub.add_parser("bench-docs", help="document indexing and search speed at N files")
    dbench.add_argument("--files", type=int, default=5_000)
    dbench.add_argument("--queries", type=int, default=200)
    dbench.add_argument("--embedding", default="local", help=embedding.HELP)
    dbench.add_argument("--out", type=Path)
    stress = sub.add_parser("stress", help="concurrent MCP clients and CLI processes on one store")
    stress.add_argument("--mcp-clients", type=int, default=8)
    stress.add_argument("--cli-workers", type=int, default=2)
    stress.add_argument("--ops", type=int, default=500, help="operations per client")
    stress.add_argument("--cli-ops", type=int, help="operations per CLI worker (default: --ops)")
    stress.add_argument("--embedding", default="local", help=embedding.HELP)
    stress.add_argument("--out", type=Path)
    mcp_tools = sub.add_parser(
        "mcp-tools", help="tools/list bytes per MCP tool mode; result bytes, compact vs full"
    )
    mcp_tools.add_argument("--out", type=Path)
    extract = sub.add_parser("extract", help="entity and fact extraction rate (memories/s)")
    extract.add_argument("--memories", type=int, default=2_000)
    extract.add_argument("--extractor", default="spacy", help="spacy | rules | llm")
    extract.add_argument("--batch", type=int, default=1_000, help="texts per extract() call")
    extract.add_argument("--out", type=Path)
    entities = sub.add_parser(
        "entities", help="entity resolution: pairwise precision and recall on labelled mentions"
    )
    entities.add_argument("--labels", type=Path, default=Path("eval/data/entity_resolution.jsonl"))
    entities.add_argument("--bench", type=Path, default=Path("../shared/bench"))
    entities.add_argument(
        "--notes", type=Path, default=Path("eval/data/entity_resolution_notes.json")
    )
    entities.add_argument(
        "--sources",
        default="docs,locomo,notes,2wiki,musique",
        help="comma-separated: docs, locomo, notes, 2wiki, musique",
    )
    entities.add_argument(
        "--cross",
        action="store_true",
        help="also leave one corpus out: rules tuned on docs measured on LoCoMo, and back",
    )
    entities.add_argument(
        "--feedback",
        action="store_true",
        help="also a simulated user deciding the steward's suggestions (P/R by decisions), "
        "and a glossary of the most mentioned entities",
    )
    entities.add_argument("--embedding", default="local", help=embedding.HELP)
    entities.add_argument(
        "--out", type=Path, help="default: eval/results/<the labels file's name>.json"
    )
    systems_help = f"recipe name(s) or 'graph', comma-separated; 'all' = {','.join(ALL_SYSTEMS)}"
    lme = sub.add_parser("longmemeval", help="LongMemEval _S session recall and nDCG @5/10")
    lme.add_argument(
        "--data",
        type=Path,
        default=Path("../shared/bench/longmemeval/longmemeval_s_sample48.json.gz"),
    )
    lme.add_argument("--system", default="hybrid", help=systems_help)
    lme.add_argument("--questions", type=int, help="only the first N questions of the file")
    lme.add_argument("--per-type", type=int, help="at most N scorable questions of each type")
    lme.add_argument("--embedding", default="local", help=embedding.HELP)
    lme.add_argument("--out", type=Path)
    ir = sub.add_parser("beir", help="a BEIR-layout collection (Cranfield): nDCG@10, recall@100")
    ir.add_argument("--data", type=Path, default=Path("../shared/bench/ir/cranfield"))
    ir.add_argument("--system", default="hybrid", help=systems_help)
    ir.add_argument("--queries", type=int, help="only the first N queries with judgments")
    ir.add_argument(
        "--distractors",
        type=int,
        help="index only the chosen queries' relevant docs plus N seeded random others",
    )
    ir.add_argument("--seed", type=int, default=0)
    ir.add_argument("--split", default="test", help="qrels/<split>.tsv")
    ir.add_argument("--embedding", default="local", help=embedding.HELP)
    ir.add_argument("--out", type=Path)
    docs = sub.add_parser(
        "docs", help="project-document search on a docs folder: doc hit@1/5, MRR@10, section hit@5"
    )
    docs.add_argument("--data", type=Path, default=Path("../shared/bench/docs"))
    docs.add_argument("--questions", type=Path, default=Path("eval/data/docs_questions.json"))
    docs.add_argument(
        "--system",
        default="hybrid,bm25,vector",
        help="doc-search recipe(s), comma-separated: hybrid | bm25 | vector",
    )
    docs.add_argument("--embedding", default="local", help=embedding.HELP)
    docs.add_argument("--limit", type=int, help="only the first N questions")
    docs.add_argument(
        "--details", action="store_true", help="add each question's top 5 (path, heading)"
    )
    docs.add_argument("--out", type=Path)
    multihop = sub.add_parser(
        "multihop", help="2WikiMultihopQA and MuSiQue passage Recall@2/5 (the HippoRAG protocol)"
    )
    multihop.add_argument(
        "--data",
        type=Path,
        default=Path("../shared/bench/multihop"),
        help="the folder of 2wikimultihopqa/ and musique/",
    )
    multihop.add_argument("--set", default="both", choices=["2wiki", "musique", "both"])
    multihop.add_argument("--system", default=",".join(MULTIHOP_SYSTEMS), help=systems_help)
    multihop.add_argument("--questions", type=int, help="only the first N questions of each set")
    multihop.add_argument("--embedding", default="local", help=embedding.HELP)
    multihop.add_argument(
        "--store",
        type=Path,
        help="keep each set's store under this folder, and reuse one built there before",
    )
    multihop.add_argument(
        "--walk",
        action="store_true",
        help="also where the gold passages recall misses lie in recall_multihop's walk (slower)",
    )
    multihop.add_argument("--out", type=Path)
    every = sub.add_parser("all", help="LoCoMo, LongMemEval and Cranfield: a table of headlines")
    every.add_argument("--bench", type=Path, default=Path("../shared/bench"))
    every.add_argument(
        "--quick",
        action="store_true",
        help="CI's slice (eval/suite.py QUICK), without LoCoMo's graph system",
    )
    every.add_argument("--embedding", default="local", help=embedding.HELP)
    every.add_argument(
        "--out", type=Path, help="default eval/results/all.json (all_quick.json with --quick)"
    )
    sessions = sub.add_parser(
        "sessions", help="closing sessions: statement kind, action and mode accuracy, wrong applies"
    )
    sessions.add_argument("--cases", type=Path, default=Path("eval/data/sessions.json"))
    sessions.add_argument("--embedding", default="local", help=embedding.HELP)
    sessions.add_argument("--out", type=Path, default=Path("eval/results/sessions.json"))
    hooks = sub.add_parser(
        "hooks", help="`graphmem hook` as a new process: p50/p95, owner running and not, bytes"
    )
    hooks.add_argument("--runs", type=int, default=30, help="new processes timed per hook")
    hooks.add_argument("--memories", type=int, default=2_000, help="synthetic notes in the store")
    hooks.add_argument("--embedding", default="local", help=embedding.HELP)
    hooks.add_argument("--out", type=Path)
    steward = sub.add_parser(
        "steward", help="the steward on a messy store: P/R per finding family, wrong auto-applies"
    )
    steward.add_argument("--memories", type=int, default=10_000)
    steward.add_argument(
        "--rate", type=float, default=0.1, help="share of the store given a known problem"
    )
    steward.add_argument("--seed", type=int, default=0)
    steward.add_argument("--bench", type=Path, default=Path("../shared/bench"))
    steward.add_argument("--embedding", default="local", help=embedding.HELP)
    steward.add_argument(
        "--pollution",
        action="store_true",
        help="also LoCoMo dev R@10: clean, with 30%% restated turns, after the steward merged them",
    )
    steward.add_argument(
        "--load",
        action="store_true",
        help="also recall latency through the store's owner, idle and while the steward runs",
    )
    steward.add_argument(
        "--extract-sources",
        help="comma-separated sources (docs, facts, locomo, longmemeval) whose memories get "
        "entities and facts (default: all); the others are imported after, unextracted",
    )
    steward.add_argument("--out", type=Path, help="default eval/results/steward_<N>.json")
    console = sub.add_parser(
        "console", help="the console's pages over HTTP through the owner: p50/p95 per page"
    )
    console.add_argument("--store", type=Path, help="an existing store's data dir to measure")
    console.add_argument(
        "--memories", type=int, default=10_000, help="without --store: build one this size"
    )
    console.add_argument(
        "--pad-to",
        type=int,
        help="then fill the store to N memories with synthetic notes, their vectors supplied "
        "and not extracted: the pages at N without hours of extraction",
    )
    console.add_argument("--rounds", type=int, default=30, help="requests timed per page")
    console.add_argument("--bench", type=Path, default=Path("../shared/bench"))
    console.add_argument("--embedding", default="local", help=embedding.HELP)
    console.add_argument("--out", type=Path, help="default eval/results/console_<N>.json")
    startup = sub.add_parser(
        "startup-load",
        help="recall p50/p95 through an owner working through an extraction backlog at start",
    )
    startup.add_argument("store", type=Path, help="a store whose memories wait for extraction")
    startup.add_argument("--embedding", default="local", help=embedding.HELP)
    startup.add_argument("--seconds", type=float, default=60.0, help="how long to time recall")
    startup.add_argument("--think", type=float, default=0.1, help="seconds between two recalls")
    startup.add_argument(
        "--multihop", action="store_true", help="time recall_multihop instead of recall"
    )
    startup.add_argument(
        "--out", type=Path, help="default eval/results/startup_load[_multihop]_<N>.json"
    )
    after = sub.add_parser(
        "walk-after-write",
        help="recall_multihop p50/p95 right after a write has changed the entity graph",
    )
    after.add_argument("store", type=Path, help="a store with its backlog drained")
    after.add_argument("--embedding", default="local", help=embedding.HELP)
    after.add_argument("--rounds", type=int, default=30, help="writes, each followed by walks")
    after.add_argument("--out", type=Path, help="default eval/results/walk_after_write_<N>.json")
    probe = sub.add_parser(
        "falkordb-probe",
        help="a FalkorDB server's vector and full-text indexes at N nodes, and a change stream",
    )
    probe.add_argument("--nodes", type=int, default=10_000)
    probe.add_argument("--queries", type=int, default=200)
    probe.add_argument("--seed", type=int, default=0)
    probe.add_argument("--out", type=Path, help="default eval/results/falkordb_probe_<N>k.json")
    team = sub.add_parser(
        "team-server",
        help="two nodes on one FalkorDB graph: write cost, the other node's recall, a backup",
    )
    team.add_argument("--writes", type=int, default=100)
    team.add_argument("--bulk", type=int, default=5_000)
    team.add_argument(
        "--nodes", action="store_true", help="one node then three at once, and the lag across them"
    )
    team.add_argument("--seconds", type=float, default=20.0, help="with --nodes: each run's length")
    team.add_argument("--out", type=Path, help="default eval/results/team_server[_nodes].json")
    fail = sub.add_parser(
        "failover",
        help="a team store's primary killed again and again while nodes write: writes lost",
    )
    fail.add_argument("--kills", type=int, default=5)
    fail.add_argument("--nodes", type=int, default=2, help="graphmem nodes writing at once")
    fail.add_argument("--between", type=float, default=3.0, help="seconds of writes between kills")
    fail.add_argument("--out", type=Path, default=Path("eval/results/failover.json"))
    args = parser.parse_args(argv)

    if args.command == "failover":
        from eval.failover import run as run_failover

        _write(run_failover(kills=args.kills, nodes=args.nodes, between=args.between), args.out)
        return 0

    if args.command == "team-server":
        from eval.team_server import run_team_server, run_three_nodes

        say = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
        if args.nodes:
            result = run_three_nodes(args.seconds, args.writes, progress=say)
            _write(result, args.out or Path("eval/results/team_server_nodes.json"))
        else:
            result = run_team_server(args.writes, args.bulk, progress=say)
            _write(result, args.out or Path("eval/results/team_server.json"))
        return 0

    if args.command == "falkordb-probe":
        from eval.falkordb_probe import results_name, run_probe

        result = run_probe(
            args.nodes, args.queries, seed=args.seed,
            progress=lambda msg: print(msg, file=sys.stderr),
        )  # fmt: skip
        _write(result, args.out or Path("eval/results") / results_name(args.nodes))
        return 0

    if args.command == "walk-after-write":
        from eval.startup_load import run_walk_after_write

        result = run_walk_after_write(args.store, args.embedding, rounds=args.rounds)
        name = f"walk_after_write_{round(result['memories'] / 1000)}k.json"
        _write(result, args.out or Path("eval/results") / name)
        return 0

    if args.command == "startup-load":
        from eval.startup_load import run_startup_load

        result = run_startup_load(
            args.store,
            args.embedding,
            seconds=args.seconds,
            think=args.think,
            multihop=args.multihop,
        )
        size = f"{round(result['memories'] / 1000)}k"
        name = f"startup_load{'_multihop' if args.multihop else ''}_{size}.json"
        _write(result, args.out or Path("eval/results") / name)
        return 0

    if args.command == "console":
        from eval.console_bench import build_store, pad, run_console_bench

        progress = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
        home = args.store or build_store(args.bench, args.memories, args.embedding, progress)
        if args.pad_to:
            pad(home, args.pad_to, args.embedding, progress)
        result = run_console_bench(home, args.embedding, rounds=args.rounds)
        size = f"{round(result['memories'] / 1000)}k"
        _write(result, args.out or Path("eval/results") / f"console_{size}.json")
        return 0

    if args.command == "steward":
        from eval.steward_run import results_name, run_steward

        result = run_steward(
            args.bench, args.memories, rate=args.rate, seed=args.seed, embedding=args.embedding,
            pollution=args.pollution, load=args.load,
            extract_sources=args.extract_sources.split(",") if args.extract_sources else None,
            progress=lambda msg: print(msg, file=sys.stderr),
        )  # fmt: skip
        _write(result, args.out or Path("eval/results") / results_name(args.memories))
        return 0

    if args.command == "bench-recovery":
        from eval.bench_recovery import run_bench_recovery

        _write(run_bench_recovery(args.memories, args.embedding, runs=args.runs), args.out)
        return 0

    if args.command == "mcp-tools":
        from eval.bench_mcp import run_mcp_bench

        _write(run_mcp_bench(), args.out)
        return 0

    if args.command == "extract":
        from eval.bench_extract import run_extract_bench

        _write(run_extract_bench(args.memories, args.extractor, batch=args.batch), args.out)
        return 0

    if args.command == "stress":
        from eval.stress import run_stress

        _write(
            run_stress(mcp_clients=args.mcp_clients, cli_workers=args.cli_workers, ops=args.ops,
                       cli_ops=args.cli_ops, embedding=args.embedding),
            args.out,
        )  # fmt: skip
        return 0

    if args.command == "docs":
        from eval.docs import run_docs

        result = run_docs(
            args.data, args.questions, args.system.split(","), args.embedding,
            limit=args.limit, details=args.details,
            progress=lambda msg: print(msg, file=sys.stderr),
        )  # fmt: skip
        _write(result, args.out)
        return 0

    if args.command == "sessions":
        from eval.sessions import run_sessions

        result = run_sessions(
            args.cases, args.embedding, progress=lambda msg: print(msg, file=sys.stderr)
        )
        _write(result, args.out)
        return 0

    embedder = make_embedder(embedding.config(args.embedding))
    if args.command == "entities":
        from eval.entities import run_entities

        result = run_entities(
            args.labels, bench=args.bench, notes=args.notes, embedder=embedder,
            kinds=args.sources.split(","), with_cross=args.cross, with_feedback=args.feedback,
            progress=lambda msg: print(msg, file=sys.stderr),
        )  # fmt: skip
        _write(result, args.out or Path("eval/results") / f"{args.labels.stem}.json")
        return 0
    if args.command == "hooks":
        from eval.bench_hooks import run_bench_hooks

        _write(run_bench_hooks(args.runs, args.embedding, embedder, args.memories), args.out)
        return 0
    if args.command == "bench-docs":
        from eval.bench_docs import run_bench_docs

        _write(run_bench_docs(embedder, args.files, args.queries), args.out)
        return 0
    if args.command == "bench-knowledge":
        from eval.bench_knowledge import run_knowledge_bench

        result = run_knowledge_bench(args.memories, args.chains, args.queries, embedder=embedder)
        _write(result, args.out)
        return 0
    if args.command in ("longmemeval", "beir"):
        from eval import beir, longmemeval

        systems = _systems(args.system)
        progress = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
        if args.command == "longmemeval":
            results = longmemeval.run(
                args.data, systems, embedder=embedder, limit_questions=args.questions,
                per_type=args.per_type, progress=progress,
            )  # fmt: skip
        else:
            results = beir.run(
                args.data, systems, embedder=embedder, split=args.split,
                limit_queries=args.queries, distractors=args.distractors, seed=args.seed,
                progress=progress,
            )  # fmt: skip
        _write(results[systems[0]] if len(systems) == 1 else results, args.out)
        return 0
    if args.command == "all":
        from eval import suite

        part = suite.QUICK if args.quick else suite.FULL
        results = suite.run_suite(
            suite.Paths.under(args.bench), embedder=embedder, part=part,
            locomo_systems=None if args.quick else ALL_SYSTEMS,
            progress=lambda msg: print(msg, file=sys.stderr),
        )  # fmt: skip
        out = args.out or Path(f"eval/results/all{'_quick' if args.quick else ''}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(suite.table(results["headline"]))
        print(f"wrote {out}")
        return 0
    if args.command == "multihop":
        from eval.multihop import SETS, run_sets

        names = list(SETS) if args.set == "both" else [args.set]
        result = run_sets(
            args.data, names, _systems(args.system), embedder=embedder,
            limit_questions=args.questions, store_dir=args.store, walk=args.walk,
            progress=lambda msg: print(msg, file=sys.stderr),
        )  # fmt: skip
        _write(result, args.out)
        return 0
    if args.command == "locomo":
        from eval.locomo import run

        systems = _systems(args.system)
        with graphs(args.falkordb, "locomo") as store:
            results = run(
                args.data,
                systems,
                embedder=embedder,
                limit_conversations=args.conversations,
                limit_questions=args.questions,
                captions=not args.no_captions,
                progress=lambda msg: print(msg, file=sys.stderr),
                store=store,
            )
        _write(results[systems[0]] if len(systems) == 1 else results, args.out)
    else:
        from eval.bench import run_bench

        with graphs(args.falkordb, "bench") as store:
            result = run_bench(
                args.memories,
                args.queries,
                embedder=embedder,
                embedding=args.embedding,
                pool_size=args.pool,
                store=store,
            )
        _write(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
