"""DataLoader workload: loading with 0 workers against 2 worker processes.

    python bench/dataloader.py                 # 2000 samples, 1 ms each, batch 32
    python bench/dataloader.py --samples 500   # shorter

Each sample sleeps ``--sleep-ms`` (a stand-in for decoding a file) and returns a 3x32x32 float32
array and an int label. Worker start-up is counted: it is part of what a user waits for. Prints
both times and the speed-up; the target is at least 1.7x with 2 workers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from oar.io import DataLoader, Dataset


class SleepyImages(Dataset):
    def __init__(self, samples: int, sleep_s: float):
        self.samples = samples
        self.sleep_s = sleep_s

    def __getitem__(self, idx):
        time.sleep(self.sleep_s)
        return np.full([3, 32, 32], idx, np.float32), idx

    def __len__(self) -> int:
        return self.samples


def load_seconds(dataset: Dataset, batch_size: int, num_workers: int) -> tuple[float, int]:
    start = time.perf_counter()
    seen = 0
    for images, _labels in DataLoader(dataset, batch_size=batch_size, num_workers=num_workers):
        seen += images.shape[0]
    return time.perf_counter() - start, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--sleep-ms", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    dataset = SleepyImages(args.samples, args.sleep_ms / 1000)
    serial, n0 = load_seconds(dataset, args.batch_size, 0)
    parallel, n1 = load_seconds(dataset, args.batch_size, args.workers)
    assert n0 == n1 == args.samples, (n0, n1)
    print(f"num_workers=0: {serial:.3f} s")
    print(f"num_workers={args.workers}: {parallel:.3f} s")
    print(f"speed-up: {serial / parallel:.2f}x")


if __name__ == "__main__":
    main()
