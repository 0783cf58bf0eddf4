"""--explain: why a pod went where it went, in two tables.

    default/web → node1 (round robin among node1, node2)
    filters
     node   Conditions  Unschedulable  Name  TaintToleration  Affinity  Ports  ResourcesFit  InterPodAffinity  why not
     node1      ✓             ✓         ✓           ✓            ✓        ✓         ✓               ✓
     node2      ✓             ✓         ✓           ✓            ✓        ✓         ✓               ✓
     node3      ✓             ✗         ·           ·            ·        ·         ·               ·          node(s) were unschedulable
    scores (0-100 × weight)
     node     LeastAllocated×1  BalancedAllocation×1  SelectorSpread×1  Affinity×2  TaintToleration×3  total
     node1 ◀                85                    87                 0           0                100    472
     node2                  85                    87                 0           0                100    472

Filters run left to right and a node is out at its first ✗, so "·" means
"never asked"; a dim ✓ is a filter with nothing to check for this pod, and
a "–" score one with no opinion. Scores are 0-100 per plugin; the total is the weighted sum,
and the best total wins (round robin when several share it). In a terminal
rich draws this with colours; into a pipe or a file it is plain text.
"""
from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table

from framework import Decision, Framework


def _short(name: str) -> str:
    """A column header: the plugin's name without the "Node" most of them start with."""
    short = name.removeprefix("NodeResources").removeprefix("Node")
    return "ResourcesFit" if short == "Fit" else short


def filter_table(decision: Decision, framework: Framework) -> Table:
    table = Table(title="filters", title_justify="left", box=None, padding=(0, 1))
    table.add_column("node", style="bold")
    for plugin in framework.filters:
        table.add_column(_short(plugin.name), justify="center")
    table.add_column("why not", style="red")
    for name in decision.nodes:
        failed, reasons = decision.failures.get(name, (None, ()))
        cells, reached = [], True
        for plugin in framework.filters:
            if not reached:
                cells.append("[dim]·[/dim]")
            elif plugin.name == failed:
                cells.append("[red]✗[/red]")
                reached = False
            elif plugin.name in decision.skipped:
                cells.append("[dim]✓[/dim]")       # nothing to check for this pod
            else:
                cells.append("[green]✓[/green]")
        table.add_row(name, *cells, ", ".join(reasons))
    return table


def score_table(decision: Decision, framework: Framework) -> Table:
    table = Table(title="scores (0-100 × weight)", title_justify="left", box=None, padding=(0, 1))
    table.add_column("node", style="bold")
    for plugin, weight in framework.scores:
        table.add_column(f"{_short(plugin.name)}×{weight}", justify="right")
    table.add_column("total", justify="right", style="bold")
    for name, scores in decision.scores.items():
        marker = " ◀" if name == decision.node else ""
        table.add_row(name + marker, *("–" if p.name in decision.skipped else str(scores[p.name])
                                       for p, _ in framework.scores), str(decision.totals[name]))
    return table


def explanation(pod_key: str, decision: Decision, framework: Framework) -> Group:
    if decision.node is None:
        title = f"[bold]{pod_key}[/bold]: [red]{decision.message}[/red]"
    elif len(decision.ties) > 1:
        title = f"[bold]{pod_key}[/bold] → {decision.node} (round robin among {', '.join(sorted(decision.ties))})"
    else:
        title = f"[bold]{pod_key}[/bold] → {decision.node}"
    if len(decision.nodes) < decision.total_nodes:
        title += f" [dim](enough feasible nodes found among {len(decision.nodes)} of {decision.total_nodes})[/dim]"
    parts = [title]
    if decision.nodes:
        parts.append(filter_table(decision, framework))
    if decision.scores:
        parts.append(score_table(decision, framework))
    return Group(*parts)


def print_explanation(pod_key: str, decision: Decision, framework: Framework, console: Console | None = None) -> None:
    (console or Console()).print(explanation(pod_key, decision, framework))
