"""``oar.utils``: helpers for code built on oar, as ``paddle.utils``.

- ``atomic_file(path, mode)``: write a file so that readers see the old content or the whole new
  content, never a part (a temporary file in the same folder, fsync, rename): what ``oar.save``
  and ``oar.jit.save`` use, for callbacks and tools that write their own files.

>>> import os, tempfile
>>> from oar.utils import atomic_file
>>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
>>> with atomic_file(path, "w", encoding="utf-8") as f:
...     _ = f.write("done")
>>> open(path, encoding="utf-8").read()
'done'
"""

from oar._engine.serialization import atomic_file as atomic_file

__all__ = ["atomic_file"]
