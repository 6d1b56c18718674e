"""Doc
string."""
from __future__ import annotations
import phobos.lang as ph
import a.b.c, d
from x.y import p as q, r
