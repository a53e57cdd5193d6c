"""L-BFGS with an optional strong-Wolfe line search, as ``paddle.optimizer.LBFGS``.

Not an update rule: one ``step(closure)`` runs up to ``max_iter`` quasi-Newton iterations, each
calling ``closure`` (which recomputes the loss and its gradients) once, or a few times in the line
search. The algorithm is Paddle's (a port of PyTorch's), computed on the parameters flattened into
one numpy vector of their dtype. As in Paddle, ``weight_decay`` and ``grad_clip`` are accepted but
not applied: the closure's gradients are used as they are.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.optimizer.optimizer import Optimizer

# Line search constants (Nocedal & Wright's): sufficient decrease and curvature.
WOLFE_C1, WOLFE_C2 = 1e-4, 0.9
MAX_LINE_SEARCH = 25
# Curvature below this is not kept in the history (the update would not stay positive definite).
MIN_CURVATURE = 1e-10


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through ``(x1, f1, g1)`` and ``(x2, f2, g2)``, within ``bounds``
    (Nocedal & Wright, formula 3.59); the middle of the bounds when the cubic has none."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = np.sqrt(d2_square)
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return float(min(max(position, low), high))


def strong_wolfe(evaluate, alpha, d, loss, grad, gtd, tolerance_change=1e-9, max_ls=MAX_LINE_SEARCH):
    """A step ``alpha`` along ``d`` meeting the strong Wolfe conditions (Nocedal & Wright,
    algorithm 3.5, bracketing then zooming). ``evaluate(alpha)`` is ``(loss, flat gradient)`` at
    ``x + alpha d``. Returns ``(loss, gradient, alpha, evaluations)``."""
    d_norm = float(np.abs(d).max())
    loss_new, grad_new = evaluate(alpha)
    evaluations = 1
    gtd_new = float(grad_new @ d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, loss, grad.copy(), gtd
    done, ls_iter = False, 0
    bracket_gtd = None
    while ls_iter < max_ls:
        if loss_new > loss + WOLFE_C1 * alpha * gtd or (ls_iter > 1 and loss_new >= f_prev):
            bracket, bracket_f = [t_prev, alpha], [f_prev, loss_new]
            bracket_g, bracket_gtd = [g_prev, grad_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -WOLFE_C2 * gtd:
            bracket, bracket_f, bracket_g = [alpha], [loss_new], [grad_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, alpha], [f_prev, loss_new]
            bracket_g, bracket_gtd = [g_prev, grad_new.copy()], [gtd_prev, gtd_new]
            break
        # Extrapolate: the next trial step lies between 1.01 and 10 times this one.
        min_step, max_step = alpha + 0.01 * (alpha - t_prev), alpha * 10
        previous = alpha
        alpha = cubic_interpolate(t_prev, f_prev, gtd_prev, alpha, loss_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = previous, loss_new, grad_new.copy(), gtd_new
        loss_new, grad_new = evaluate(alpha)
        evaluations += 1
        gtd_new = float(grad_new @ d)
        ls_iter += 1
    if ls_iter == max_ls:  # no bracket found: zoom between the start and the last trial
        bracket, bracket_f, bracket_g = [0.0, alpha], [loss, loss_new], [grad, grad_new]
        bracket_gtd = [gtd, gtd_new]

    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        alpha = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # Keep the trial away from the bracket's ends unless progress has stalled.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - alpha, alpha - min(bracket)) < eps:
            if insufficient_progress or alpha >= max(bracket) or alpha <= min(bracket):
                alpha = max(bracket) - eps if abs(alpha - max(bracket)) < abs(alpha - min(bracket)) \
                    else min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        loss_new, grad_new = evaluate(alpha)
        evaluations += 1
        gtd_new = float(grad_new @ d)
        ls_iter += 1
        if loss_new > loss + WOLFE_C1 * alpha * gtd or loss_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = \
                alpha, loss_new, grad_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -WOLFE_C2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = alpha, loss_new, grad_new.copy(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evaluations


class LBFGS(Optimizer):
    """L-BFGS (Nocedal & Wright, algorithm 7.5), as ``paddle.optimizer.LBFGS``: ``step(closure)``
    runs up to ``max_iter`` iterations; ``closure`` clears the gradients, computes the loss,
    calls ``backward()`` and returns the loss. ``line_search_fn='strong_wolfe'`` picks each step
    by a strong-Wolfe line search, else the step is ``learning_rate`` (scaled down on the first
    iteration). Returns the loss of the first closure call.

    >>> import oar
    >>> x = oar.to_tensor([1.5, -0.5], stop_gradient=False)
    >>> opt = oar.optimizer.LBFGS(parameters=[x], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.clear_grad()
    ...     loss = ((x - oar.to_tensor([3.0, 1.0])) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure)
    >>> [round(v, 4) for v in x.tolist()]
    [3.0, 1.0]
    """

    def __init__(self, learning_rate=1.0, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None, parameters=None, weight_decay=None, grad_clip=None,
                 name=None):
        if line_search_fn not in (None, "strong_wolfe"):
            raise ArgumentError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        for arg, value in (("max_iter", max_iter), ("history_size", history_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentError(f"LBFGS: {arg} must be a positive int, got {value!r}")
        self.learning_rate = float(learning_rate)
        self.max_iter = max_iter
        self.max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        self.tolerance_grad, self.tolerance_change = float(tolerance_grad), float(tolerance_change)
        self.history_size = history_size
        self.line_search_fn = line_search_fn
        self.state: dict = {"func_evals": 0, "n_iter": 0}
        super().__init__(1.0, parameters, weight_decay, grad_clip, name)
        self._lbfgs_params = [p for group in self._param_groups for p in group["params"]]

    # -- the parameters as one vector ---------------------------------------------------------
    def _flat_grad(self) -> np.ndarray:
        return np.concatenate([np.zeros(p.size, p.numpy().dtype) if p.grad is None else p.grad.numpy().reshape(-1)
                               for p in self._lbfgs_params])

    def _flat_params(self) -> np.ndarray:
        return np.concatenate([p.numpy().reshape(-1) for p in self._lbfgs_params])

    def _set_flat(self, flat: np.ndarray) -> None:
        offset = 0
        for p in self._lbfgs_params:
            p.set_value(flat[offset:offset + p.size].reshape(p.shape).astype(p.numpy().dtype, copy=False))
            offset += p.size

    def _loss_of(self, closure) -> tuple[object, float]:
        with oar.enable_grad():
            loss = closure()
        return loss, float(loss)

    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations on what ``closure`` computes; returns the
        loss of its first call."""
        if not callable(closure):
            raise ArgumentError("LBFGS.step: closure is required: a function that clears the gradients, computes "
                                "the loss, calls loss.backward() and returns the loss")
        with oar.no_grad():
            return self._run(closure)

    def _run(self, closure):
        state = self.state
        first_loss, loss = self._loss_of(closure)
        evaluations = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= self.tolerance_grad:
            return first_loss
        d, alpha = state.get("d"), state.get("alpha")
        old_y, old_s, ro = state.get("old_yk"), state.get("old_sk"), state.get("ro")
        h_diag, prev_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < self.max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_y, old_s, ro, h_diag = -flat_grad, [], [], [], 1.0
            else:
                y, s = flat_grad - prev_grad, d * alpha
                ys = float(y @ s)
                if ys > MIN_CURVATURE:
                    if len(old_y) == self.history_size:
                        old_y.pop(0), old_s.pop(0), ro.pop(0)
                    old_y.append(y)
                    old_s.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y @ y)
                d = self._direction(flat_grad, old_y, old_s, ro, h_diag)
            prev_grad = flat_grad.copy()
            prev_loss = loss
            # The first step is scaled to the gradient's size; later ones trust the curvature.
            alpha = min(1.0, 1.0 / float(np.abs(flat_grad).sum())) * self.learning_rate if state["n_iter"] == 1 \
                else self.learning_rate
            gtd = float(flat_grad @ d)
            if gtd > -self.tolerance_change:  # not a descent direction
                break
            if self.line_search_fn == "strong_wolfe":
                start = self._flat_params()

                def evaluate(step, start=start, d=d):
                    self._set_flat(start + step * d)
                    _, value = self._loss_of(closure)
                    grad = self._flat_grad()
                    self._set_flat(start)
                    return value, grad

                loss, flat_grad, alpha, line_evaluations = strong_wolfe(
                    evaluate, alpha, d, loss, flat_grad, gtd, tolerance_change=self.tolerance_change)
                self._set_flat(start + alpha * d)
                optimal = np.abs(flat_grad).max() <= self.tolerance_grad
            else:
                self._set_flat(self._flat_params() + alpha * d)
                line_evaluations, optimal = 0, False
                if n_iter != self.max_iter:
                    _, loss = self._loss_of(closure)
                    flat_grad = self._flat_grad()
                    optimal = np.abs(flat_grad).max() <= self.tolerance_grad
                    line_evaluations = 1
            evaluations += line_evaluations
            state["func_evals"] += line_evaluations
            if optimal or np.abs(d * alpha).max() <= self.tolerance_change or abs(loss - prev_loss) < \
                    self.tolerance_change or evaluations >= self.max_eval:
                break
        state.update(d=d, alpha=alpha, old_yk=old_y, old_sk=old_s, ro=ro, H_diag=h_diag, prev_flat_grad=prev_grad,
                     prev_loss=prev_loss)
        return first_loss

    @staticmethod
    def _direction(flat_grad, old_y, old_s, ro, h_diag) -> np.ndarray:
        """``-H grad`` by the two-loop recursion over the kept curvature pairs."""
        q = -flat_grad
        al = [0.0] * len(old_y)
        for i in range(len(old_y) - 1, -1, -1):
            al[i] = float(old_s[i] @ q) * ro[i]
            q = q - al[i] * old_y[i]
        r = q * h_diag
        for i in range(len(old_y)):
            be_i = float(old_y[i] @ r) * ro[i]
            r = r + old_s[i] * (al[i] - be_i)
        return r

    def state_dict(self) -> dict:
        """``{'state': ...}`` as Paddle's LBFGS: the iteration counts, the last direction and
        step, the curvature history and the previous gradient and loss (arrays as tensors)."""
        def tensor(value):
            return oar.to_tensor(value) if isinstance(value, np.ndarray) else value

        packed = {k: [tensor(v) for v in value] if isinstance(value, list) else tensor(value)
                  for k, value in self.state.items()}
        return {"state": packed}

    def set_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict`` returned."""
        if not isinstance(state_dict, dict) or not isinstance(state_dict.get("state"), dict):
            raise ArgumentError("LBFGS.set_state_dict: expected {'state': {...}} as LBFGS.state_dict() returns")

        def array(value):
            return value.numpy() if isinstance(value, oar.Tensor) else value

        self.state = {k: [array(v) for v in value] if isinstance(value, list) else array(value)
                      for k, value in state_dict["state"].items()}

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        raise NotImplementedError("LBFGS does not minimize a loss tensor: call step(closure) with a closure that "
                                  "recomputes the loss (see oar.optimizer.LBFGS)")


__all__ = ["LBFGS"]
