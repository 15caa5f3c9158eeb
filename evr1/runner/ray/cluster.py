"""Ray for a run: the embedded local instance or an existing cluster, placement, and where things landed.

- `ray_session(resources)`: an embedded Ray sized by `ResourcesSpec`, or, with `ray_address` (or
  `RAY_ADDRESS`, as `ray job submit` sets it), the existing cluster, attached without the
  local-only arguments. A refused connection names what Ray's token auth needs. Ray's notice that it
  turned token auth on is left out for the embedded Ray (it lives and dies with the run, and no one
  else connects to it); its warning that auth is off, and everything about a cluster, are kept.
- `Ask` / `bundles`: each actor's request; actors that share a GPU (a colocated engine, a reference
  beside learner 0) share one placement-group bundle, so colocation never depends on creation order.
- `check_fits(asks, nodes)`: refuses, before any actor starts, a run the cluster cannot hold.
- `Placement`: the placement group and each role's scheduling strategy.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evr1.errors import ConfigError

AUTH_HELP = (
    "Ray's token auth is on for clusters made with `ray start`: set RAY_AUTH_MODE=token where evr1 runs, with the"
    " cluster's token in ~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN (the head node wrote it to its"
    " own ~/.ray/auth_token)"
)
LOCAL_ONLY = ("num_cpus", "object_store_memory_mb")  # ResourcesSpec fields that size an embedded Ray only


def cluster_address(resources: Any) -> str | None:
    """The cluster to attach to: `resources.ray_address`, else `RAY_ADDRESS` (set by `ray job submit`)."""
    return resources.ray_address or os.environ.get("RAY_ADDRESS") or None


def outside_job_copy(run_dir: Path) -> None:
    """Refuse a run folder inside Ray's temporary copy of a job's `working_dir`, which `ray stop` deletes."""
    where = run_dir.resolve()
    if "runtime_resources" in where.parts:
        raise ConfigError(
            f"the run folder {where} is inside Ray's temporary copy of the job's working_dir, deleted by `ray stop`:"
            " give the job an absolute --run-dir or trainer.run_root on storage every node sees"
        )


def cluster_address_label(resources: Any) -> str:
    return cluster_address(resources) or "embedded"


@contextlib.contextmanager
def ray_session(resources: Any) -> Iterator[None]:
    """An embedded local Ray, or the cluster at `cluster_address`; reuses one already running."""
    import ray

    if ray.is_initialized():
        yield
        return
    address = cluster_address(resources)
    if address:
        attach(address, resources)
    else:
        from evr1.runner.ray import reaper

        reaper.watch_descendants()  # the local Ray's helpers end with this process, even after kill -9
        with _without_auth_notice():
            ray.init(
                address="local",  # a new embedded Ray, even when another one runs here (Ray's default joins it)
                num_cpus=resources.num_cpus or 2,
                num_gpus=resources.num_gpus,
                include_dashboard=False,
                object_store_memory=resources.object_store_memory_mb * 2**20,
                log_to_driver=True,
                configure_logging=False,
            )
        reaper.sync()
    try:
        yield
    finally:
        ray.shutdown()


AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
AUTH_NOTICE = "Token authentication is enabled for this Ray cluster."  # how Ray 2.60's notice begins


class _AuthNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(AUTH_NOTICE)


@contextlib.contextmanager
def _without_auth_notice() -> Iterator[None]:
    """Meanwhile, Ray's notice that it turned token auth on for a new local Ray is not printed."""
    logger, notice = logging.getLogger(AUTH_LOGGER), _AuthNotice()
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


def attach(address: str, resources: Any) -> None:
    """Connect to the cluster at `address`; the settings that size an embedded Ray are reported as unused."""
    import ray

    ignored = [f"resources.{name}" for name in LOCAL_ONLY if name in resources.model_fields_set]
    if ignored:
        print(f"note: attached to the Ray cluster at {address}: {', '.join(ignored)} size an embedded Ray only and are"
              " not used (the cluster's own `ray start` settings apply)")
    try:
        ray.init(address=address, log_to_driver=True)
    except (ConnectionError, RuntimeError) as exc:  # Ray wraps the cause (AuthenticationError) in these
        if _auth_failure(exc):
            raise ConfigError(f"the Ray cluster at {address} refused the connection: {AUTH_HELP}") from None
        raise ConfigError(f"cannot attach to the Ray cluster at {address}: {_first_line(exc)} (is it running? see"
                          " `ray status` on its head node)") from None


def _auth_failure(exc: BaseException | None) -> bool:
    from ray.exceptions import AuthenticationError

    while exc is not None:
        if isinstance(exc, AuthenticationError) or "InvalidAuthToken" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@dataclass(frozen=True)
class Ask:
    """One actor's request; `bundle` names the bundle it shares (default: its own)."""

    role: str  # "learner 0", "rollout", "reference", "reward 0"
    cpus: float
    gpus: float = 0.0
    bundle: str | None = None

    @property
    def home(self) -> str:
        return self.bundle or self.role


def bundles(asks: Sequence[Ask]) -> tuple[list[dict[str, float]], dict[str, int]]:
    """Placement-group bundles (one per home, in first-seen order) and each role's bundle index."""
    order: list[str] = []
    totals: dict[str, dict[str, float]] = {}
    for ask in asks:
        if ask.home not in totals:
            order.append(ask.home)
            totals[ask.home] = {"CPU": 0.0, "GPU": 0.0}
        totals[ask.home]["CPU"] += ask.cpus
        totals[ask.home]["GPU"] += ask.gpus
    shaped = [{k: v for k, v in totals[home].items() if v > 0} or {"CPU": 0.01} for home in order]
    index = {ask.role: order.index(ask.home) for ask in asks}
    return shaped, index


def _fmt(amount: float) -> str:
    return f"{amount:g}"


def check_fits(asks: Sequence[Ask], nodes: Sequence[Mapping[str, Any]]) -> None:
    """Refuse (naming what is missing) a set of requests the alive `nodes` (`ray.nodes()`) cannot hold."""
    shaped, _ = bundles(asks)
    alive = [n for n in nodes if n.get("Alive", True)]
    have = {k: sum(float(n["Resources"].get(k, 0.0)) for n in alive) for k in ("CPU", "GPU")}
    need = {k: sum(b.get(k, 0.0) for b in shaped) for k in ("CPU", "GPU")}
    asked = ", ".join(f"{a.role} {_fmt(a.cpus)} CPU" + (f" + {_fmt(a.gpus)} GPU" if a.gpus else "") for a in asks)
    short = [f"{_fmt(need[k])} {k}s (the cluster has {_fmt(have[k])})" for k in ("CPU", "GPU") if need[k] > have[k] + 1e-9]
    if short:
        raise ConfigError(
            f"this run needs {' and '.join(short)}: {asked}. Lower resources.learner_workers or reward_workers, add"
            " nodes, or (embedded Ray) raise resources.num_cpus / num_gpus"
        )
    for bundle in shaped:
        if not any(all(float(n["Resources"].get(k, 0.0)) + 1e-9 >= v for k, v in bundle.items()) for n in alive):
            raise ConfigError(f"no single node of the cluster has {bundle} for one of: {asked}")


class Placement:
    """A placement group holding every actor of the run; `strategy(role)` schedules one actor into its bundle."""

    def __init__(self, asks: Sequence[Ask], strategy: str, timeout_s: float) -> None:
        import ray
        from ray.util.placement_group import placement_group

        check_fits(asks, ray.nodes())
        shaped, self.index = bundles(asks)
        self.group = placement_group(shaped, strategy=strategy.upper())
        ready, _ = ray.wait([self.group.ready()], timeout=timeout_s)
        if not ready:
            self.remove()
            free = ray.available_resources()
            raise ConfigError(
                f"the cluster could not place {shaped} ({strategy}) within {timeout_s:g} s; available now:"
                f" {_fmt(free.get('CPU', 0))} CPU, {_fmt(free.get('GPU', 0))} GPU (other jobs may hold the rest)"
            )

    def strategy(self, role: str) -> Any:
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        return PlacementGroupSchedulingStrategy(placement_group=self.group, placement_group_bundle_index=self.index[role])

    def remove(self) -> None:
        from ray.util.placement_group import remove_placement_group

        remove_placement_group(self.group)


def node_address() -> dict[str, str]:
    """Where the calling Ray worker runs: node id and address."""
    import ray

    return {"node_id": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address()}


def rendezvous_address(placement: Placement, role: str) -> str:
    """A `host:port` free now on the node of `role`'s bundle, reachable from the other nodes (its node address)."""
    import ray

    def pick() -> str:
        from evr1.runner.learner.distributed import free_port

        host = ray.util.get_node_ip_address()
        return f"{host}:{free_port(host)}"

    return ray.get(ray.remote(num_cpus=0)(pick).options(scheduling_strategy=placement.strategy(role)).remote())


def cluster_nodes() -> list[dict[str, Any]]:
    """The alive nodes and their resources, for the run's record."""
    import ray

    return [
        {"node_id": n["NodeID"], "ip": n["NodeManagerAddress"],
         "resources": {k: v for k, v in n["Resources"].items() if k in ("CPU", "GPU", "memory", "object_store_memory")}}
        for n in ray.nodes() if n.get("Alive", True)
    ]  # fmt: skip
