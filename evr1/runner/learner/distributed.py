"""Process groups for data-parallel learners, and the collectives the learner needs.

`init_process_group(rank, world_size, address)` joins a group explicitly (no environment
variables): gloo on CPU, NCCL on CUDA. Every collective here is called the same number of times,
in the same order, on every worker whatever its data, so workers whose batches differ (one
video-only, one image-only, one with no sample at all) never wait on each other forever.

Gradients are summed (not averaged) across workers: the learner's loss is already normalised by
the global batch (`evr1.algos.aggregation.Normaliser`), so the sum is the whole batch's gradient.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from evr1.errors import Evr1Error


class RendezvousError(Evr1Error):
    """A learner could not join its process group: the message names the rank, its host and the address."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free now on `host` (for a rendezvous address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def interface_of(ip: str) -> str | None:
    """The network interface that holds address `ip` on this machine, if any."""
    import psutil

    return next((name for name, addrs in psutil.net_if_addrs().items() if any(a.address == ip for a in addrs)), None)


def default_backend(device: torch.device | str) -> str:
    return "nccl" if torch.device(device).type == "cuda" else "gloo"


def init_process_group(
    rank: int,
    world_size: int,
    address: str,
    *,
    backend: str | None = None,
    timeout_s: float = 600.0,
    connect_timeout_s: float = 60.0,
    bind_ip: str | None = None,
) -> None:
    """Join the default process group of `world_size` workers rendezvousing at `address` ("host:port").

    Rank 0 serves the rendezvous store at `address` (on its own node) and the others connect to it.
    `backend`: gloo (CPU) or nccl (CUDA; default when CUDA is available). A worker that cannot join
    within `connect_timeout_s` raises `RendezvousError`; a collective that waits longer than
    `timeout_s` raises instead of hanging. `bind_ip`: this worker's node address; gloo binds on its interface
    (unless `GLOO_SOCKET_IFNAME` is set).
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside a world of {world_size} workers")
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"rendezvous address must be 'host:port', got {address!r}")
    backend = backend or default_backend("cuda" if torch.cuda.is_available() else "cpu")
    if backend == "gloo" and bind_ip and "GLOO_SOCKET_IFNAME" not in os.environ and (name := interface_of(bind_ip)):
        os.environ["GLOO_SOCKET_IFNAME"] = name  # else gloo binds where the hostname resolves, maybe not this node's link
    try:
        store = dist.TCPStore(
            host, int(port), world_size, is_master=rank == 0, timeout=timedelta(seconds=connect_timeout_s),
            wait_for_workers=True,
        )  # fmt: skip
    except (RuntimeError, OSError) as exc:  # torch's DistStoreError / DistNetworkError are RuntimeErrors
        joined = "the other workers did not join it" if rank == 0 else "it could not reach it"
        raise RendezvousError(
            f"learner rank {rank} of {world_size} on {socket.gethostname()}: rendezvous at {address} failed within"
            f" {connect_timeout_s:g} s ({joined}): {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}"
        ) from None
    dist.init_process_group(backend=backend, store=store, rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))


def destroy_process_group() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def world_size() -> int:
    """Workers in the default group (1 when none is initialised)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _collective_device() -> str:
    """Where the default group's backend takes tensors: NCCL only CUDA ones, gloo CPU ones."""
    return "cuda" if dist.get_backend() == "nccl" else "cpu"


def all_reduce_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum `values` over all workers, in place, wherever they live (a no-op with a single worker)."""
    if world_size() > 1:
        device = _collective_device()
        if values.device.type == device:
            dist.all_reduce(values, op=dist.ReduceOp.SUM)
        else:
            moved = values.to(device)
            dist.all_reduce(moved, op=dist.ReduceOp.SUM)
            values.copy_(moved)
    return values


def all_gather_objects(obj: Any) -> list[Any]:
    """Every worker's `obj` (picklable), in rank order."""
    if world_size() == 1:
        return [obj]
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, obj)
    return gathered


@torch.no_grad()
def all_reduce_gradients(params: Sequence[torch.nn.Parameter]) -> None:
    """Sum the gradients of `params` over all workers with ONE all-reduce of a flat float32 buffer.

    A parameter without a gradient on a worker (e.g. the vision tower on a text-only batch)
    contributes zeros; one that has no gradient on any worker keeps `grad = None`, as it would
    in a single process over the whole batch (so AdamW leaves it alone).
    """
    if world_size() == 1 or not params:
        return
    device = params[0].device
    sizes = [p.numel() for p in params]
    flat = torch.zeros(sum(sizes) + len(params), dtype=torch.float32, device=device)
    used = flat[sum(sizes) :]
    offset = 0
    for i, (param, size) in enumerate(zip(params, sizes)):
        if param.grad is not None:
            flat[offset : offset + size] = param.grad.reshape(-1)
            used[i] = 1.0
        offset += size
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    offset = 0
    for param, size, anywhere in zip(params, sizes, (used > 0).tolist()):
        param.grad = flat[offset : offset + size].view_as(param).to(param.dtype) if anywhere else None
        offset += size


def all_reduce_max(value: int) -> int:
    """The largest `value` over all workers."""
    if world_size() == 1:
        return value
    tensor = torch.tensor([value], dtype=torch.int64, device=_collective_device())
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return int(tensor.item())


def shard_model(model: torch.nn.Module, *, param_dtype: torch.dtype | None = None) -> torch.nn.Module:
    """Shard `model` with torch FSDP2 (`fully_shard`): each decoder layer, then the whole model.

    Parameters stay float32 (the optimizer's master copy); `param_dtype` (e.g. bfloat16) is the
    compute dtype; gradients are reduced in float32. FSDP2 averages gradients over workers, so
    the learner builds its normaliser with `world_size=W`. The vision tower stays in the root
    unit: all its parameters are gathered whether or not a worker's batch has media, and stay
    gathered from the root's forward until its backward. FSDP2 reduce-scatters only the
    parameters that got a gradient, so each backward must reach the same parameters on every
    worker (else gloo fails on a size mismatch and NCCL hangs): the learner sees to it with
    `evr1.models.forward.vision_anchor` on micro-batches without media. The replicated learner
    (`all_reduce_gradients`) needs no such care.
    """
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    for layer in model.model.language_model.layers:
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model
