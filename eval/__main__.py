"""`python -m eval locomo|bench ...`: runs an evaluation and writes JSON results."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from graphmem.embeddings.config import EmbeddingConfig
from graphmem.embeddings.factory import make_embedder


def _write(payload: object, out: Path | None) -> None:
    text = json.dumps(payload, indent=2)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
    print(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval")
    sub = parser.add_subparsers(dest="command", required=True)
    loc = sub.add_parser("locomo", help="LoCoMo turn-level evidence recall@5/10/25")
    loc.add_argument("--data", type=Path, default=Path("../shared/bench/locomo/locomo_dev.json"))
    loc.add_argument(
        "--system",
        default="hybrid",
        help="recipe name(s), comma-separated; 'all' = hybrid,bm25,vector",
    )
    loc.add_argument("--out", type=Path)
    loc.add_argument("--embedding", default="local", help="embedding provider (local | hash)")
    loc.add_argument("--conversations", type=int, help="only the first N conversations")
    loc.add_argument("--questions", type=int, help="only the first N questions of each")
    loc.add_argument("--no-captions", action="store_true", help="leave image captions out")
    bench = sub.add_parser("bench", help="store rate, recall latency and RSS at N memories")
    bench.add_argument("--memories", type=int, default=10_000)
    bench.add_argument("--queries", type=int, default=200)
    bench.add_argument("--embedding", default="local")
    bench.add_argument("--out", type=Path)
    kbench = sub.add_parser("bench-knowledge", help="timeline and as-of latency with chains")
    kbench.add_argument("--memories", type=int, default=10_000)
    kbench.add_argument("--chains", type=int, default=2_000)
    kbench.add_argument("--queries", type=int, default=200)
    kbench.add_argument("--embedding", default="local")
    kbench.add_argument("--out", type=Path)
    stress = sub.add_parser("stress", help="concurrent MCP clients and CLI processes on one store")
    stress.add_argument("--mcp-clients", type=int, default=8)
    stress.add_argument("--cli-workers", type=int, default=2)
    stress.add_argument("--ops", type=int, default=500, help="operations per client")
    stress.add_argument("--cli-ops", type=int, help="operations per CLI worker (default: --ops)")
    stress.add_argument("--embedding", default="local")
    stress.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    if args.command == "stress":
        from eval.stress import run_stress

        _write(
            run_stress(mcp_clients=args.mcp_clients, cli_workers=args.cli_workers, ops=args.ops,
                       cli_ops=args.cli_ops, embedding=args.embedding),
            args.out,
        )  # fmt: skip
        return 0

    embedder = make_embedder(EmbeddingConfig(provider=args.embedding))
    if args.command == "bench-knowledge":
        from eval.bench_knowledge import run_knowledge_bench

        result = run_knowledge_bench(args.memories, args.chains, args.queries, embedder=embedder)
        _write(result, args.out)
        return 0
    if args.command == "locomo":
        from eval.locomo import run

        systems = ["hybrid", "bm25", "vector"] if args.system == "all" else args.system.split(",")
        results = run(
            args.data,
            systems,
            embedder=embedder,
            limit_conversations=args.conversations,
            limit_questions=args.questions,
            captions=not args.no_captions,
            progress=lambda msg: print(msg, file=sys.stderr),
        )
        _write(results[systems[0]] if len(systems) == 1 else results, args.out)
    else:
        from eval.bench import run_bench

        _write(run_bench(args.memories, args.queries, embedder=embedder), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
