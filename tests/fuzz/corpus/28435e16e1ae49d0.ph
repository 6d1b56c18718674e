"""doc"""
from __future__ import annotations
from __future__ import division
import os
import phobos.lang
import phobos.lang as ph
x = 1
"ok string"
def f():
    pass
@ph.kernel
def k():
    pass
@ph.kernel
def k():
    pass
