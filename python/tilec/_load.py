"""Your own kernels from Python: tilec.load opens a .tl program (a file or source text) or a
fatbin built by ``tilec build``, and each kernel is an attribute of the library it returns,
called with torch tensors. The launch goes through the machinery of the shipped library
(tilec._runtime): one runtime per device, the specialisations cached in memory and on disk,
the current torch stream, the device following the tensors.

How a call chooses its specialisation:

- a ``type`` generic is the dtype of the first tensor argument declared with it
  (``x: T[N]`` and a bf16 ``x`` give ``T=bf16``), unless given by keyword;
- every other generic is given by keyword (``BLOCK=512``) or takes its default;
- an optional tensor (``bias: f32[N]?``) is present when a tensor is passed and absent for
  None.

Kernel parameters are passed by position or by keyword, generics by keyword only: the language
gives no parameter a generic's name, so a keyword is never ambiguous. ``Kernel.specialize``
fixes generics apart from the call (``lib.scale.specialize(BLOCK=512)(x, y, 2.0)``).
"""
import hashlib
import inspect
import os
import tempfile
import typing

import torch

from . import _runtime

__all__ = ["load", "register_op", "Library", "Kernel", "Specialization"]

_DTYPE_NAMES = {v: k for k, v in _runtime._DTYPES.items()}  # "bf16" -> torch.bfloat16
_FLOATS = {"f16", "bf16", "f32", "f64", "e4m3", "e5m2", "ue8m0", "e2m1"}


class _Param:
    __slots__ = ("name", "tensor", "elem", "rank", "optional")

    def __init__(self, name, tensor, elem, rank=0, optional=False):
        self.name, self.tensor, self.elem, self.rank, self.optional = name, tensor, elem, rank, optional

    def __repr__(self):
        if self.tensor:
            return f"{self.name}: {self.elem}[{self.rank}-D]" + ("?" if self.optional else "")
        return f"{self.name}: {self.elem}"


def _parse_interface(text):
    """The "tilec-iface 1" text of Library.interface: (generics {name: (kind, default text or
    None)}, [_Param], doc)."""
    generics, params, doc = {}, [], []
    for line in text.splitlines()[2:]:
        word, _, rest = line.partition(" ")
        if word == "generic":
            name, kind, *default = rest.split(" ", 2)
            generics[name] = (kind, default[0] if default else None)
        elif word == "tensor":
            name, elem, rank, *flags = rest.split(" ")
            params.append(_Param(name, True, elem, int(rank), "optional" in flags))
        elif word == "scalar":
            name, elem = rest.split(" ")
            params.append(_Param(name, False, elem))
        elif word == "doc":
            doc.append(rest)
    return generics, params, "\n".join(doc)


def _generic_text(name, kind, v):
    """A generic value as the runtime takes it ("NAME=VALUE")."""
    if kind == "type":
        if isinstance(v, torch.dtype):
            if v not in _runtime._DTYPES:
                raise ValueError(f"generic '{name}': tilec has no element type for {v}")
            v = _runtime._DTYPES[v]
        if not isinstance(v, str):
            raise TypeError(f"generic '{name}' is a type: give a torch dtype or a tilec type name, got {v!r}")
        return f"{name}={v}"
    if kind == "bool":
        if not isinstance(v, bool):
            raise TypeError(f"generic '{name}' is a bool, got {type(v).__name__} {v!r}")
        return f"{name}={'true' if v else 'false'}"
    if kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"generic '{name}' is an int, got {type(v).__name__} {v!r}")
        return f"{name}={v}"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"generic '{name}' is a float, got {type(v).__name__} {v!r}")
    return f"{name}={float(v)!r}"


def _signature_params(sig):
    """The parameters of a "tilec-sig 1" text: [(name, "tensor"/"scalar", dtype, rank, flags)]."""
    out = []
    for line in sig.splitlines():
        w = line.split(" ")
        if w[0] == "tensor":
            out.append((w[2], "tensor", w[3], int(w[4]), tuple(w[6:])))
        elif w[0] == "scalar":
            out.append((w[2], "scalar", w[3], 0, ()))
    return out


class Library:
    """The kernels of one program, as attributes: ``lib.NAME`` is a :class:`Kernel`.
    Made by :func:`load`; ``dir(lib)`` and :meth:`kernels` list the kernels."""

    def __init__(self, spec, path, origin):
        self._spec = spec        # Runtime.open keywords
        self._path = path        # the .tl file or the fatbin
        self._origin = origin    # what load() was given, for repr
        self._libs = {}          # device key -> _native.Library
        self._kernels = {}
        self._fatbin = "fatbin" in spec
        # open now, so that a program with errors fails here, with the compiler's diagnostics
        # (on the emulator; on the GPU when TILEC_DEVICE=cuda allows no other)
        first = _runtime.CPU if _runtime._FORCED != "cuda" and not self._fatbin else None
        if first is None:
            first = torch.cuda.current_device() if torch.cuda.is_available() else _runtime.CPU
        self._describer = self._native(first)
        if self._fatbin:
            self._aot = [s for s in self._describer.aot_signatures()]
            names = []
            for s in self._aot:
                for line in s.splitlines():
                    if line.startswith("kernel ") and line[7:] not in names:
                        names.append(line[7:])
            self._names = names
        else:
            self._names = self._describer.kernels()

    def _native(self, dev):
        lib = self._libs.get(dev)
        if lib is None:
            if self._fatbin and dev == _runtime.CPU:
                raise ValueError(f"tilec: '{self._path}' holds GPU code only: CPU tensors (the emulator) need the kernel's "
                                 ".tl source (tilec.load of the .tl file)")
            try:
                lib = self._libs[dev] = _runtime.open_library(dev, **self._spec)
            except _runtime.LaunchError:
                raise
            except RuntimeError as e:
                raise RuntimeError(f"tilec.load: {e}") from None
        return lib

    def kernels(self):
        """The names of the program's kernels (of a fatbin: those it holds specialisations of)."""
        return list(self._names)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        k = self._kernels.get(name)
        if k is None:
            if name not in self._names:
                have = ", ".join(self._names) or "none"
                raise AttributeError(f"tilec: {self._origin} has no kernel '{name}' (its kernels: {have})")
            k = self._kernels[name] = Kernel(self, name)
        return k

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._names))

    def __repr__(self):
        return f"<tilec.Library {self._origin}: {', '.join(self._names)}>"


class Kernel:
    """A kernel of a :class:`Library`, called with torch tensors, Python numbers and None (an
    absent optional tensor): ``lib.scale(x, y, 2.0, BLOCK=512)``. Parameters go by position or
    keyword, generics by keyword (a torch dtype or a type name for a ``type`` generic); a
    ``type`` generic not given is the dtype of the first tensor declared with it. The launch
    runs on the tensors' device (CPU: the emulator) on the current torch stream; CUDA launches
    are asynchronous. Arguments that do not match the kernel's signature raise ValueError naming
    the argument, before anything runs.

    Attributes: ``name``; ``generics`` ({name: (kind, default source text or None)});
    ``params`` (each with name, tensor, elem, rank, optional); ``interface`` (the declared
    interface as text)."""

    def __init__(self, library, name):
        self.library = library
        self.name = name
        if library._fatbin:
            self.interface = None
            self.generics, self.params, doc = {}, None, ""
            self._aot = []
            for s in library._aot:
                if f"\nkernel {name}\n" in s:
                    key = next(line[4:] for line in s.splitlines() if line.startswith("key "))
                    gens = key[key.index("<") + 1:-1]
                    self._aot.append((tuple(sorted(g for g in gens.split(",") if g)), _signature_params(s)))
            self.params = [_Param(p[0], p[1] == "tensor", p[2], p[3], "optional" in p[4])
                           for p in self._aot[0][1]]
        else:
            self.interface = library._describer.interface(name)
            self.generics, self.params, doc = _parse_interface(self.interface)
        self.__doc__ = doc or None
        self._index = {p.name: i for i, p in enumerate(self.params)}

    def __repr__(self):
        gens = ", ".join(f"{g}: {k}" + (f" = {d}" if d is not None else "") for g, (k, d) in self.generics.items())
        return f"<tilec.Kernel {self.name}" + (f"<{gens}>" if gens else "") + \
            f"({', '.join(map(repr, self.params))})>"

    # ---- binding a call ----
    def _bind(self, args, kw, fixed):
        if len(args) > len(self.params):
            raise TypeError(f"{self.name}() takes {len(self.params)} arguments ({', '.join(p.name for p in self.params)}),"
                            f" {len(args)} given")
        values = list(args) + [_MISSING] * (len(self.params) - len(args))
        generics = dict(fixed)
        for k, v in kw.items():
            i = self._index.get(k)
            if i is not None:
                if values[i] is not _MISSING:
                    raise TypeError(f"{self.name}() got argument '{k}' twice")
                values[i] = v
            elif k in self.generics or (self.library._fatbin and k not in self._index):
                generics[k] = v
            else:
                raise TypeError(f"{self.name}() has no parameter or generic '{k}' (parameters: "
                                f"{', '.join(p.name for p in self.params)}; generics: "
                                f"{', '.join(self.generics) or 'none'})")
        for i, v in enumerate(values):
            if v is _MISSING:
                raise TypeError(f"{self.name}() is missing argument '{self.params[i].name}'")
        return values, generics

    def _device(self, values):
        first = None
        for p, v in zip(self.params, values):
            if isinstance(v, torch.Tensor):
                if first is None:
                    first = (p.name, v)
                elif v.device != first[1].device:
                    raise ValueError(f"{self.name}: tensors on different devices: argument '{first[0]}' is on "
                                     f"{first[1].device}, argument '{p.name}' on {v.device}")
        if first is None:
            raise ValueError(f"{self.name}: no tensor argument: the device follows the tensors")
        if first[1].device.type not in ("cpu", "cuda"):
            raise ValueError(f"{self.name}: argument '{first[0]}' is on {first[1].device}: tilec runs CPU tensors "
                             "(the emulator) and CUDA tensors")
        return first[1]

    def _generics(self, values, given):
        """The "NAME=VALUE" tuple of the specialisation for these arguments."""
        if self.library._fatbin:
            return self._aot_generics(values, given)
        out = {}
        for g, v in given.items():
            out[g] = _generic_text(g, self.generics[g][0], v)
        for g, (kind, default) in self.generics.items():
            if g in out:
                continue
            if kind != "type":
                if default is None:
                    raise TypeError(f"{self.name}: generic '{g}' ({kind}) has no default: give it by keyword ({g}=...)")
                continue
            for p, v in zip(self.params, values):
                if p.tensor and p.elem == g and isinstance(v, torch.Tensor):
                    name = _runtime._DTYPES.get(v.dtype)
                    if name is None:
                        raise ValueError(f"{self.name}: argument '{p.name}' has dtype {v.dtype}, which tilec has no "
                                         "element type for")
                    out[g] = f"{g}={name}"
                    break
            else:
                if default is None:
                    raise TypeError(f"{self.name}: generic '{g}' is not given and no tensor argument binds it: give it "
                                    f"by keyword ({g}=torch.float32)")
        for p, v in zip(self.params, values):
            if p.optional:
                out[p.name] = f"{p.name}={'absent' if v is None else 'present'}"
        return tuple(sorted(out.values()))

    def _aot_generics(self, values, given):
        """A fatbin's kernel: the one specialisation it holds for these dtypes and generics."""
        want = {g: str(v).lower() if isinstance(v, bool) else
                (_runtime._DTYPES.get(v, v) if isinstance(v, torch.dtype) else str(v)) for g, v in given.items()}
        for gens, sig in self._aot:
            gd = dict(g.split("=", 1) for g in gens)
            if any(gd.get(g) != v for g, v in want.items()):
                continue
            ok = True
            for (pname, kind, dtype, rank, flags), v in zip(sig, values):
                if kind == "tensor" and isinstance(v, torch.Tensor) and _runtime._DTYPES.get(v.dtype) != dtype:
                    ok = False
                if kind == "tensor" and ("absent" in flags) != (v is None):
                    ok = False
            if ok:
                return gens
        held = "; ".join(",".join(g) or "(no generics)" for g, _ in self._aot)
        raise ValueError(f"{self.name}: '{self.library._path}' holds no specialisation for these dtypes and generics "
                         f"{want or ''} (it holds: {held})")

    def _launch(self, values, generics):
        t = self._device(values)
        gens = self._generics(values, generics)
        try:
            k = _runtime.kernel(self.name, gens, t, self.library)
            k.launch(*values, stream=_runtime.stream(t))
        except _runtime.LaunchError as e:
            raise ValueError(f"{self.name}: {e}") from None

    def __call__(self, *args, **kw):
        values, generics = self._bind(args, kw, {})
        self._launch(values, generics)

    def specialize(self, **generics):
        """A :class:`Specialization`: this kernel with ``generics`` fixed (``T=torch.bfloat16``,
        ``BLOCK=512``). Calling it launches as the kernel does; its ``signature(device)`` is
        the compiled interface. A generic not known to the kernel is a TypeError."""
        for g in generics:
            if g not in self.generics and not self.library._fatbin:
                raise TypeError(f"{self.name} has no generic '{g}' (generics: {', '.join(self.generics) or 'none'})")
        return Specialization(self, generics)


_MISSING = object()


class Specialization:
    """A :class:`Kernel` with some generics fixed: ``spec(x, y, 2.0)`` launches it (generics
    not fixed are inferred or given by keyword as for the kernel); ``spec.signature()`` is the
    compiled signature."""

    def __init__(self, kernel, generics):
        self.kernel = kernel
        self.generics = dict(generics)

    def __call__(self, *args, **kw):
        values, generics = self.kernel._bind(args, kw, self.generics)
        self.kernel._launch(values, generics)

    def signature(self, device="cpu", **optional):
        """The specialisation's signature text ("tilec-sig 1", docs/runtime.md): its parameters
        with dtypes and ranks, which tensors it writes, the grid, threads, shared memory and the
        requirements checked at launch; compiled for ``device`` ("cpu": the emulator, or a CUDA
        device) if not cached. Every generic without a default must be fixed, and every
        optional tensor said present or absent (``bias=True`` / ``bias=False``)."""
        k = self.kernel
        if k.library._fatbin:
            raise ValueError(f"{k.name}: the signatures of a fatbin's kernels are in its manifest")
        gens = {g: _generic_text(g, k.generics[g][0], v) for g, v in self.generics.items()}
        for name, present in optional.items():
            gens[name] = f"{name}={'present' if present else 'absent'}"
        probe = torch.empty(0, device=torch.device(device))  # stands for the device
        return _runtime.kernel(k.name, tuple(sorted(gens.values())), probe, k.library).signature

    def __repr__(self):
        return f"<tilec.Specialization {self.kernel.name} {self.generics}>"


def _source_file(text):
    """Source text handed to load(): written once, under its hash, to a file the compiler
    reads (diagnostics name it)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    for base in (os.environ.get("TILEC_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tilec"),
                 tempfile.gettempdir()):
        d = os.path.join(base, "sources")
        path = os.path.join(d, f"{digest}.tl")
        try:
            if not os.path.exists(path):
                os.makedirs(d, exist_ok=True)
                tmp = f"{path}.{os.getpid()}"
                with open(tmp, "w") as f:
                    f.write(text)
                os.replace(tmp, path)
            return path
        except OSError:
            continue
    raise OSError("tilec.load: no writable directory for the source text (set TILEC_CACHE_DIR)")


def load(path_or_source, *, include=(), defines=None):
    """Open a tilec program and return its :class:`Library`, whose attributes are its kernels.

    ``path_or_source``: a ``.tl`` file (a str or a path), source text (a str holding a newline),
    or a fatbin / cubin built by ``tilec build`` with its manifest next to it
    (``FILE.manifest``; a fatbin runs CUDA tensors only). ``include``: folders searched for
    imports after the importing file's own (``tilec -I``); with source text, the current
    folder comes first. ``defines``: {NAME: value} overriding module constants (``tilec -D``).

    The program is parsed and checked now: an error raises RuntimeError with the compiler's
    ``file:line:col: error: ...`` diagnostics. Kernels compile on first use for each set of
    generics and device, cached in memory and in ``$TILEC_CACHE_DIR`` (default
    ``~/.cache/tilec``)."""
    include = [os.fspath(i) for i in ([include] if isinstance(include, (str, os.PathLike)) else include)]
    defs = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in (defines or {}).items()]
    if isinstance(path_or_source, str) and "\n" in path_or_source:
        path = _source_file(path_or_source)
        include = [os.getcwd()] + include
        origin = "<source>"
    else:
        path = os.fspath(path_or_source)
        origin = repr(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"tilec.load: no such file: '{path}'")
    if path.endswith((".fatbin", ".cubin")):
        manifest = path + ".manifest"
        if not os.path.exists(manifest):
            raise FileNotFoundError(f"tilec.load: '{path}' has no manifest '{manifest}' next to it (tilec build "
                                    "writes both)")
        spec = {"fatbin": os.path.abspath(path), "manifest": os.path.abspath(manifest)}
    else:
        spec = {"source": os.path.abspath(path), "include_dirs": include, "defines": defs}
    try:
        return Library(spec, path, origin)
    except RuntimeError as e:
        msg = str(e)
        raise RuntimeError(msg if msg.startswith("tilec.load") else f"tilec.load: {msg}") from None


_ANNOTATIONS = {"tensor": torch.Tensor, "optional": typing.Optional[torch.Tensor], "float": float, "int": int,
                "bool": bool}


def register_op(kernel, name, *, mutates, **generics):
    """Register ``kernel`` (a :class:`Kernel`, or a :class:`Specialization` for fixed generics)
    as the torch custom op ``name`` ("namespace::op") and return it (torch.library.custom_op).

    ``mutates``: the names of the tensor parameters the kernel writes. Outputs are allocated by
    the caller, so the op returns nothing and its fake implementation does nothing: under
    torch.compile (fullgraph too), FakeTensor and torch.library.opcheck the op is traced
    without running. ``generics``: fixed for every call, like :meth:`Kernel.specialize`;
    ``type`` generics not fixed are inferred from the tensors at each call."""
    if isinstance(kernel, Specialization):
        generics = {**kernel.generics, **generics}
        kernel = kernel.kernel
    if not isinstance(kernel, Kernel):
        raise TypeError(f"register_op: expected a tilec Kernel (lib.NAME), got {type(kernel).__name__}")
    if isinstance(mutates, str):
        mutates = (mutates,)
    mutates = tuple(mutates)
    tensors = [p.name for p in kernel.params if p.tensor]
    for m in mutates:
        if m not in tensors:
            raise ValueError(f"register_op: '{m}' in mutates is not a tensor parameter of {kernel.name} "
                             f"(its tensors: {', '.join(tensors)})")
    spec = kernel.specialize(**generics)
    params = []
    for p in kernel.params:
        if p.tensor:
            ann = _ANNOTATIONS["optional" if p.optional else "tensor"]
        elif p.elem == "bool":
            ann = bool
        elif p.elem in _FLOATS or (p.elem in kernel.generics and kernel.generics[p.elem][0] == "type"):
            ann = float
        else:
            ann = int
        params.append(inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ann))

    def impl(*args, **kw):
        spec(*args, **kw)

    impl.__signature__ = inspect.Signature(params, return_annotation=None)
    impl.__name__ = name.split("::")[-1]
    impl.__doc__ = kernel.__doc__
    op = torch.library.custom_op(name, impl, mutates_args=mutates)

    def fake(*args, **kw):
        return None

    fake.__signature__ = impl.__signature__
    op.register_fake(fake)
    return op
