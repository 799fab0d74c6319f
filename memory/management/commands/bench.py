"""python manage.py bench — run the benchmarks registered in memory.bench (see its docstring)."""

from django.core.management.base import BaseCommand, CommandError

from memory.bench import discover, run_benchmarks


class Command(BaseCommand):
    help = "Run the benchmarks and print their figures. `make bench` runs this on a throwaway database."

    def add_arguments(self, parser):
        parser.add_argument("--only", action="append", metavar="NAME", help="run only this benchmark (repeatable)")
        parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
        parser.add_argument("--scale", type=float, default=1.0, help="multiply the data sizes (default 1)")
        parser.add_argument("--strict", action="store_true", help="exit non-zero when a target is missed")

    def handle(self, *args, only, list, scale, strict, **options):
        if list:
            for name, bm in discover().items():
                self.stdout.write(f"{name:<16} {bm.title}")
            return
        if scale <= 0:
            raise CommandError("--scale must be a positive number")
        try:
            results = run_benchmarks(only=only, scale=scale, out=self.stdout)
        except KeyError as exc:
            raise CommandError(exc.args[0]) from None
        figures = [f for bench in results for f in bench.figures]
        missed = [f for f in figures if f.met is False]
        self.stdout.write("")
        if missed:
            self.stdout.write(
                self.style.WARNING(
                    f"{len(missed)} target(s) missed: "
                    + "; ".join(f"{f.label} ({f.value:,.3f} {f.unit})" for f in missed)
                )
            )
            if strict:
                raise CommandError("benchmark targets missed")
        else:
            met = sum(1 for f in figures if f.met)
            self.stdout.write(self.style.SUCCESS(f"{len(results)} benchmark(s), {met} target(s) met"))
