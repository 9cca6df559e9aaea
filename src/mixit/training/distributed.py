"""Data-parallel training with torchrun: ``torchrun --nproc_per_node=N -m mixit train ...``.

Every rank draws the same global batch (same seeded sampler) and trains on its own slice of
it; DistributedDataParallel averages the gradients. The loss on each rank is its slice's
summed token loss over the *global* number of scored tokens, times the world size, so the
averaged gradient is exactly the gradient of the global mean loss, whatever the split. Only
rank 0 writes files. NCCL on GPUs, gloo on CPUs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from mixit.common.errors import UsageError


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_environment(cls, device: torch.device) -> Ranks:
        """The process group torchrun describes in the environment (one process if none)."""
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world == 1:
            return cls()
        if not dist.is_initialized():
            dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
        return cls(dist.get_rank(), dist.get_world_size())

    def device(self, device: torch.device) -> torch.device:
        """One GPU per rank (LOCAL_RANK); the CPU is shared."""
        if device.type == "cuda" and self.world > 1:
            local = int(os.environ.get("LOCAL_RANK", "0"))
            torch.cuda.set_device(local)
            return torch.device("cuda", local)
        return device

    def check_batch(self, batch_size: int) -> None:
        if batch_size % self.world:
            raise UsageError(
                f"train.batch_size={batch_size} is not divisible by the {self.world} processes"
            )

    def shard(self, index: torch.Tensor) -> torch.Tensor:
        """This rank's contiguous slice of a global batch (B,) -> (B / world,)."""
        size = len(index) // self.world
        return index[self.rank * size : (self.rank + 1) * size]

    def sum(self, value: torch.Tensor) -> torch.Tensor:
        """The sum over ranks (a copy; the value itself when alone)."""
        if self.world == 1:
            return value
        total = value.detach().clone()
        dist.all_reduce(total)
        return total

    def check_identical(self, named: dict[str, torch.Tensor]) -> None:
        """Every rank must hold the same fixed buffers (MixiT's mixing): seeded, and checked."""
        if self.world == 1:
            return
        for name, tensor in named.items():
            mine = tensor.detach().double().sum().reshape(1)
            lowest, highest = mine.clone(), mine.clone()
            dist.all_reduce(lowest, op=dist.ReduceOp.MIN)
            dist.all_reduce(highest, op=dist.ReduceOp.MAX)
            if lowest.item() != highest.item():
                raise RuntimeError(f"buffer {name} differs between ranks")

    def close(self) -> None:
        if self.world > 1 and dist.is_initialized():
            dist.destroy_process_group()


ALONE = Ranks()  # a single process
