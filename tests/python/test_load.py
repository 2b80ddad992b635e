"""Kernels of your own from Python (tilec.load, tilec.register_op) on CPU tensors, which run on
the emulator: a scale kernel and a kernel generic in two element types with an optional tensor,
written to the test's folder, against PyTorch; the errors of bad calls and bad sources; the
kernel as a torch custom op under torch.compile(fullgraph=True) and torch.library.opcheck; and
every example of docs/python.md, run as the page says."""
import os
import re
import shlex
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
BUILD = os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))
sys.path.insert(0, BUILD)

import tilec  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TILEC = os.path.join(BUILD, "..", "compiler", "tilec")

SCALE = """\
/// y = x * a
kernel scale<T: type, BLOCK: int = 256>(x: T[N], y: T[N], a: f32)
    grid(cdiv(N, BLOCK)) threads(BLOCK)
{
    let i = block.x * BLOCK + thread.x;
    if i < N {
        y[i] = T(f32(x[i]) * a);
    }
}
"""

ROWS = """\
/// out[r, c] = x[r, c] * w[c] (+ bias[c]) in f32, stored as T
kernel scale_rows<T: type, W: type = f32>(
    x: T[M, K] strides(SX, 1), w: W[K], bias: f32[K]?, out: T[M, K])
    grid(M) threads(128)
{
    require SX >= K, "rows of x overlap";
    let r = block.x;
    for c in thread.x .. K step 128 {
        var v = f32(x[r, c]) * f32(w[c]);
        if const present(bias) {
            v += bias[c];
        }
        out[r, c] = T(v);
    }
}

kernel splat<V: float>(y: f32[N]) grid(cdiv(N, 128)) threads(128)
{
    let i = block.x * 128 + thread.x;
    if i < N {
        y[i] = V;
    }
}
"""


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    d = tmp_path_factory.mktemp("kernels")
    (d / "scale.tl").write_text(SCALE)
    (d / "rows.tl").write_text(ROWS)
    return tilec.load(d / "scale.tl"), tilec.load(str(d / "rows.tl")), d


def test_scale_against_torch(libs):
    lib = libs[0]
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        for n in (1, 255, 256, 1000):
            x = torch.randn(n).to(dtype)
            y = torch.empty_like(x)
            lib.scale(x, y, 1.5)
            assert torch.equal(y, (x.float() * 1.5).to(dtype)), (dtype, n)
    x = torch.randn(3000)
    y = torch.empty_like(x)
    lib.scale(x, y, a=-2.0, BLOCK=1024)          # a parameter and a generic by keyword
    assert torch.equal(y, x * -2.0)
    lib.scale.specialize(BLOCK=128)(x, y, 3.0)
    assert torch.equal(y, x * 3.0)


def test_generic_types_and_optional_tensor(libs):
    lib = libs[1]
    x = torch.randn(7, 520, dtype=torch.bfloat16)[:, :300]      # padded rows: strides (520, 1)
    for wdt in (torch.float32, torch.float16):
        w = torch.randn(300).to(wdt)
        b = torch.randn(300)
        out = torch.empty(7, 300, dtype=torch.bfloat16)
        lib.scale_rows(x, w, None, out)                          # T = bf16, W from w, bias absent
        assert torch.equal(out, (x.float() * w.float()).bfloat16())
        lib.scale_rows(x, w, b, out)
        assert torch.equal(out, (x.float() * w.float() + b).bfloat16())
    y = torch.empty(10)
    lib.splat(y, V=0.25)
    assert torch.equal(y, torch.full((10,), 0.25))
    assert lib.scale_rows.generics == {"T": ("type", None), "W": ("type", "f32")}
    assert [p.name for p in lib.scale_rows.params] == ["x", "w", "bias", "out"]
    assert lib.scale_rows.params[2].optional and lib.scale_rows.params[0].rank == 2
    assert "stored as T" in lib.scale_rows.__doc__
    assert sorted(lib.kernels()) == ["scale_rows", "splat"] and "splat" in dir(lib)


def test_signature(libs):
    sig = libs[0].scale.specialize(T=torch.bfloat16, BLOCK=512).signature()
    assert "key scale<" in sig and "tensor 1 y bf16 1" in sig and "written" in sig and "grid (cdiv N 512)" in sig
    sig = libs[1].scale_rows.specialize(T="f16").signature(bias=False)
    assert "absent" in sig


def test_bad_arguments(libs):
    lib, rows = libs[0], libs[1]
    x = torch.randn(100)
    with pytest.raises(ValueError, match="argument 'y': expected dtype f32, got f16"):
        lib.scale(x, torch.empty(100, dtype=torch.float16), 2.0)
    with pytest.raises(ValueError, match="argument 'y': expected rank 1, got 2"):
        lib.scale(x, torch.empty(1, 100), 2.0)
    with pytest.raises(ValueError, match="argument 'y'"):
        lib.scale(x, torch.empty(99), 2.0)                        # N bound by x
    with pytest.raises(ValueError, match="tensors on different devices: argument 'x' is on cpu, argument 'y' on meta"):
        lib.scale(x, torch.empty(100, device="meta"), 2.0)
    with pytest.raises(ValueError, match="rows of x overlap"):
        rows.scale_rows(torch.randn(4, 8).as_strided((4, 8), (4, 1)), torch.randn(8), None, torch.empty(4, 8))
    with pytest.raises(ValueError, match="argument 'x' has dtype torch.complex64"):
        lib.scale(torch.zeros(4, dtype=torch.complex64), torch.zeros(4, dtype=torch.complex64), 1.0)
    with pytest.raises(TypeError, match="no parameter or generic 'BLOK'"):
        lib.scale(x, torch.empty_like(x), 2.0, BLOK=512)
    with pytest.raises(TypeError, match="has no generic 'BLOK'"):
        lib.scale.specialize(BLOK=512)
    with pytest.raises(TypeError, match="generic 'BLOCK' is an int"):
        lib.scale(x, torch.empty_like(x), 2.0, BLOCK=1.5)
    with pytest.raises(TypeError, match="missing argument 'a'"):
        lib.scale(x, torch.empty_like(x))
    with pytest.raises(TypeError, match="generic 'V' \(float\) has no default"):
        rows.splat(torch.empty(4))
    with pytest.raises(AttributeError, match="has no kernel 'scael' \\(its kernels: scale\\)"):
        lib.scael
    with pytest.raises(RuntimeError, match="threads"):           # a specialisation the compiler refuses
        lib.scale(x, torch.empty_like(x), 2.0, BLOCK=2048)


def test_bad_sources(tmp_path):
    bad = tmp_path / "bad.tl"
    bad.write_text("kernel k(x: f32[N]) grid(1) threads(32)\n{\n    let y = ;\n}\n")
    with pytest.raises(RuntimeError) as e:
        tilec.load(bad)
    assert f"{bad}:3:13: error: unexpected ';'" in str(e.value)
    with pytest.raises(RuntimeError, match=r"sources/[0-9a-f]{16}\.tl:1:\d+: error"):
        tilec.load("kernel k(x: f32[N] grid(1) threads(32) {\n}\n")
    with pytest.raises(FileNotFoundError, match="no such file"):
        tilec.load(tmp_path / "missing.tl")
    (tmp_path / "k.fatbin").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="manifest"):
        tilec.load(tmp_path / "k.fatbin")


def test_source_text_include_and_defines(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "twice.tl").write_text("fn twice(v: f32) -> f32 { return v * 2.0; }\n")
    monkeypatch.chdir(tmp_path)
    lib = tilec.load("import \"twice.tl\";\nconst K = 1.0;\n"
                     "kernel k(x: f32[N]) grid(cdiv(N, 32)) threads(32) {\n"
                     "    let i = block.x * 32 + thread.x;\n    if i < N { x[i] = twice(x[i]) + K; }\n}\n",
                     include=[tmp_path / "lib"], defines={"K": 0.5})
    x = torch.arange(40.0)
    want = x * 2 + 0.5
    lib.k(x)
    assert torch.equal(x, want)


def test_register_op_compile_and_opcheck(libs):
    lib = libs[1]
    op = tilec.register_op(lib.scale_rows, "tilec_test::scale_rows", mutates=("out",))

    def f(x, w, b, out):
        op(x, w, b, out)
        return out.float().sum(1) + 1

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    x = torch.randn(6, 200, dtype=torch.float16)
    w = torch.randn(200)
    b = torch.randn(200)
    for bias in (b, None):
        o1, o2 = torch.empty(6, 200, dtype=torch.float16), torch.empty(6, 200, dtype=torch.float16)
        assert torch.equal(compiled(x, w, bias, o1), f(x, w, bias, o2))
        assert torch.equal(o1, o2)
        torch.library.opcheck(op, (x, w, bias, torch.empty(6, 200, dtype=torch.float16)))
    fill = tilec.register_op(lib.splat, "tilec_test::fill_half", mutates="y", V=0.5)
    y = torch.empty(33)
    torch.compile(lambda y: fill(y), fullgraph=True, backend="aot_eager")(y)
    assert torch.equal(y, torch.full((33,), 0.5))
    torch.library.opcheck(fill, (torch.empty(33),))
    with pytest.raises(ValueError, match="'w' in mutates is not|not a tensor parameter"):
        tilec.register_op(lib.splat, "tilec_test::fill_bad", mutates=("w",), V=1.0)


def _blocks(text):
    """(kind, file name or None, body) of each fenced block of a markdown page."""
    pat = re.compile(r"(?:<!-- file: (\S+) -->\n)?```(\w+)\n(.*?)```", re.S)
    return [(m.group(2), m.group(1), m.group(3)) for m in pat.finditer(text)]


def test_docs_python_md(tmp_path):
    text = open(os.path.join(ROOT, "docs", "python.md")).read()
    blocks = _blocks(text)
    assert {"tl", "sh", "python"} <= {b[0] for b in blocks}
    code = []
    for kind, name, body in blocks:
        if kind == "tl":
            assert name, "a tl block of docs/python.md needs a <!-- file: NAME --> line above it"
            (tmp_path / name).write_text(body)
        elif kind == "sh":
            for line in body.splitlines():
                argv = shlex.split(line.split("#")[0])
                assert argv and argv[0] == "tilec", line
                r = subprocess.run([TILEC] + argv[1:], cwd=tmp_path, capture_output=True, text=True, timeout=120)
                assert r.returncode == 0, (line, r.stderr)
        elif kind == "python":
            code.append(body)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(BUILD))
    r = subprocess.run([sys.executable, "-c", "\n".join(code)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert "argument 'y': expected dtype bf16, got f16" in r.stdout
    assert "grid (cdiv N 512)" in r.stdout
