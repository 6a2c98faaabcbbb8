#!/usr/bin/env python3
"""Print the DT_SONAME of the shared library the linker would use for -lNAME.

usage: soname.py LIBDIR NAME

LIBDIR is the library's pkg-config libdir; LIBDIR/libNAME.so (normally a
symlink to the versioned file) is read. The lazily loaded libraries
(src/util/lazy.h) are opened at run time by this name, the same one the
dynamic loader would have read from DT_NEEDED: it is read from the library
found at configure time, never guessed. Exits 1 with a message when the file
is missing or not an ELF shared object with a soname.
"""
import os
import struct
import sys

DT_NULL, DT_STRTAB, DT_SONAME = 0, 5, 14
PT_LOAD, PT_DYNAMIC = 1, 2


def soname(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    if is64:
        phoff, = struct.unpack_from(end + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
        phfmt, dynfmt = end + "IIQQQQQQ", end + "qQ"
    else:
        phoff, = struct.unpack_from(end + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 0x2A)
        phfmt, dynfmt = end + "IIIIIIII", end + "iI"
    loads, dyn = [], None
    for i in range(phnum):
        ph = struct.unpack_from(phfmt, data, phoff + i * phentsize)
        if is64:
            p_type, _, p_offset, p_vaddr, _, p_filesz = ph[:6]
        else:
            p_type, p_offset, p_vaddr, _, p_filesz = ph[:5]
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dyn = (p_offset, p_filesz)
    if dyn is None:
        raise ValueError("no dynamic section")
    strtab = name = None
    step = struct.calcsize(dynfmt)
    for off in range(dyn[0], dyn[0] + dyn[1], step):
        tag, val = struct.unpack_from(dynfmt, data, off)
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = val
        elif tag == DT_SONAME:
            name = val
    if strtab is None or name is None:
        raise ValueError("no DT_SONAME")
    for vaddr, offset, filesz in loads:  # DT_STRTAB is an address
        if vaddr <= strtab < vaddr + filesz:
            start = strtab - vaddr + offset + name
            return data[start:data.index(b"\0", start)].decode()
    raise ValueError("DT_STRTAB outside the loaded segments")


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: soname.py LIBDIR NAME\n")
        return 2
    path = os.path.join(sys.argv[1], "lib%s.so" % sys.argv[2])
    try:
        print(soname(path))
    except (OSError, ValueError, struct.error) as e:
        sys.stderr.write("soname.py: %s: %s\n" % (path, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
