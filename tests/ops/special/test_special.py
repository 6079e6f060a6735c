"""torch.special's Bessel and Airy functions and orthogonal polynomials: torch -> IR -> NumPy reference and both
targets' emitted models, against torch; polygamma of negative inputs (keras-jax's reflection); igamma and zeta
verified on random inputs inside their declared domain when the example inputs lie outside it.

The inputs cover each approximation's branches (|x| <= 5 and past it for J/Y, x <= 2 and past it for K, the three
pieces of Ai), the special values (0, negative, +-1) and, for the polynomials, negative, fractional and large
degrees, |x| > 1, n both as an input (a loop to max(n) at run time) and as a constant (a fixed-length loop), and
the high degrees where torch takes the Chebyshev closed forms.
"""
import json

import pytest
import torch

from portx.api import convert
from portx.ops import special
from tests.support.harness import check_torch_op

#: values at every branch point of the Cephes approximations torch uses
_BESSEL_X = torch.tensor([[-12.5, -7.5, -3.2, -0.3],
                          [0.0, 1e-6, 0.4, 1.9], [2.1, 4.9, 5.1, 8.3], [15.0, 40.0, 0.75, 3.3]])
_POSITIVE_X = torch.tensor([[1e-3, 0.1, 0.5, 1.0],
                            [1.99, 2.01, 3.5, 7.0], [12.0, 30.0, 60.0, 0.0], [-1.0, 2.0, 0.25, 5]])
_AIRY_X = torch.tensor([[-15.0, -6.0, -2.2, -2.0],
                        [-1.0, 0.0, 0.7, 2.0], [2.1, 5.0, 8.0, 9.0], [20.0, 60.0, -0.4, 1.5]])

_POLY_X = torch.tensor([[-1.5], [-1.0], [-0.7], [0.0], [0.3], [0.5], [1.0], [2.2]])
_DEGREES = torch.tensor([[-2.0, -0.5, 0.0, 1.0, 2.0, 3.9, 7.0, 12.0]])
_CONSTANT_DEGREES = torch.tensor([0.0, 3.0, 6.0, 130.0])  # 130: past the Hermite limit (NaN)
_BESSEL_INPUTS = {"bessel_j0": _BESSEL_X, "bessel_j1": _BESSEL_X, "bessel_y0": _BESSEL_X, "bessel_y1": _BESSEL_X,
                  "modified_bessel_i0": _BESSEL_X, "modified_bessel_i1": _BESSEL_X,
                  "modified_bessel_k0": _POSITIVE_X, "modified_bessel_k1": _POSITIVE_X,
                  "scaled_modified_bessel_k0": _POSITIVE_X, "scaled_modified_bessel_k1": _POSITIVE_X,
                  "spherical_bessel_j0": _BESSEL_X, "airy_ai": _AIRY_X}


def _unary(name):
    fn = getattr(torch.special, name)
    return lambda v: fn(v)


def _binary(name):
    fn = getattr(torch.special, name)
    return lambda x, n: fn(x, n)


def _constant_degree(name):
    fn = getattr(torch.special, name)
    return lambda x: fn(x, _CONSTANT_DEGREES)


def _polygamma(n):
    return lambda v: torch.polygamma(n, v)


#: (torch program, inputs, IR ops the graph must hold)
CASES = [pytest.param(_unary(name), [x], [name], id=name) for name, x in _BESSEL_INPUTS.items()] + [
    pytest.param(_binary(name), [_POLY_X, _DEGREES], [name], id=f"{name}-degree-tensor")
    for name in sorted(special.POLYNOMIALS)] + [
    pytest.param(_binary(name), [torch.tensor([[0.05], [0.3], [0.62], [0.97]]), torch.tensor([[9.0, 25.0, 60.0]])],
                 [name], id=f"{name}-closed-form") for name in sorted(special.CLOSED_FORMS)] + [
    pytest.param(_constant_degree(name), [torch.tensor([[-0.9], [0.2], [1.0], [1.3]])], [name],
                 id=f"{name}-constant-degree")
    for name in ("chebyshev_polynomial_t", "hermite_polynomial_h", "laguerre_polynomial_l")] + [
    pytest.param(_polygamma(n), [torch.tensor([[-8.598, -3.3, -0.07], [0.4, 2.0, 7.5]])], ["polygamma"],
                 id=f"polygamma-{n}-negative") for n in (1, 2, 3)]


@pytest.mark.parametrize("fn, inputs, ops", CASES)
def test_special_case(target, fn, inputs, ops):
    check_torch_op(fn, *inputs, target=target, expect_ops=ops, atol=1e-4, rtol=1e-4)


def test_every_special_op_has_a_case():
    covered = {op for row in CASES for op in row.values[2]}
    assert set(special.BESSEL) | set(special.POLYNOMIALS) <= covered


def test_polynomial_reference_follows_torch_conventions():
    x, n = torch.tensor([0.3, 0.3, 2.0, -1.0]), torch.tensor([-1.0, 2.7, 130.0, 3.0])
    got = special.polynomial_numpy("hermite_polynomial_he", x.numpy(), n.numpy())
    want = torch.special.hermite_polynomial_he(x, n).numpy()
    assert got[0] == 0.0 and got[2] != got[2] and abs(got[1] - want[1]) < 1e-6 and abs(got[3] - want[3]) < 1e-5


class _Gammainc(torch.nn.Module):
    def forward(self, a, x):
        return torch.special.gammainc(a, x) + torch.special.zeta(a + 1.5, x)


def test_igamma_verifies_in_its_domain_when_the_example_is_outside(target, tmp_path):
    # a < 0 gives NaN everywhere: random inputs are drawn above the declared bounds and the example is not compared
    result = convert(_Gammainc().eval(), to=target, out=tmp_path / "out",
                     example_inputs=(torch.tensor([[-0.5, -1.5]]), torch.tensor([[2.0, 3.0]])), static_batch=1)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verification"]["passed"] and result.model is not None
    assert any("every output is NaN" in note for note in report["verification"]["notes"])
