"""The AST rewrites of dynamic-to-static: Python control flow into calls of the runtime helpers.

Before them, ``note_outer_stores`` puts an ``outer_store`` call before each statement that assigns a
variable the function declares ``global`` (or ``nonlocal``): state outside the function that a
program would not change again, so the capture breaks there. Then the tree goes through four
passes, each small enough to read on its own:

1. ``ExpressionTransformer``: ``a and b`` / ``a or b`` / ``not a`` / ``x if c else y`` become
   ``convert_logical_*`` / ``convert_ifelse_expr`` calls with their operands in lambdas (lazy, so
   Python values behave exactly as in Python); ``f(...)`` becomes ``convert_call(f)(...)``, and
   ``len(x)`` ``convert_len(len, x)`` (a traced tensor's dynamic first dim, guarded as ``x.shape[0]``).
2. ``lower_returns``: a function with an early ``return`` gets one exit -- each ``return v`` sets a
   return flag and a value variable, the statements after it are guarded by ``if not flag``.
3. ``lower_loops``: ``for i in range(...)`` becomes a ``while`` over a hidden index; ``break`` and
   ``continue`` become flag variables, folded into the loop's condition and guarding the rest.
4. ``lower_control_flow``: each ``if`` and ``while`` becomes nested functions (the branches, the
   condition, the body, and a getter and setter of the variables they assign, which they share
   with the function through ``nonlocal``) and one ``convert_ifelse`` / ``convert_while_loop``
   call. At run time the helpers run Python control flow on Python values and build ``cond`` /
   ``while_loop`` ops on traced tensors.

Generated names start with ``__oar_`` (the user's code may not use that prefix) and come from a
counter; every identifier in the output comes from the user's own tree or from those names. New
nodes copy the location of the statement they replace, so tracebacks and graph-break warnings
name the user's file and line.
"""

from __future__ import annotations

import ast
import copy
import itertools

PREFIX = "__oar_"
RUNTIME = "__oar_jst"  # the name the runtime helpers are reachable under in converted code
FUNC_PREFIX = PREFIX + "fn_"  # generated nested functions: never loop or branch variables
RETURN_VALUE_PREFIX = PREFIX + "rval_"

# Calls left as they are: ``super()`` needs its own frame, ``range`` is recognised by pass 3.
_CALLS_KEPT = {"super", "range", "len", "isinstance", "print", "type", "getattr", "hasattr", "setattr"}
# Method names that change a Python object in place: inside a tensor-dependent branch or loop both
# branches (or one traced iteration) run, so such a change would be made the wrong number of times.
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
             "discard", "popitem", "sort", "reverse"}


class Unsupported(Exception):
    """A construct the converter does not handle; the function is traced unconverted."""

    def __init__(self, what: str, node: ast.AST | None = None):
        self.lineno = getattr(node, "lineno", None)
        super().__init__(what if self.lineno is None else f"{what} (line {self.lineno})")


# ------------------------------------------------------------------------------------------
# small AST builders
# ------------------------------------------------------------------------------------------
def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _runtime(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name(RUNTIME), attr=attr, ctx=ast.Load())


def _call(func: ast.expr, *args: ast.expr) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=[])


def _assign(target: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[_name(target, store=True)], value=value)


def _const(value) -> ast.Constant:
    return ast.Constant(value=value)


def _lambda(body: ast.expr) -> ast.Lambda:
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])
    return ast.Lambda(args=args, body=body)


def _def(name: str, body: list[ast.stmt], params: tuple[str, ...] = ()) -> ast.FunctionDef:
    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=name, args=args, body=body or [ast.Pass()], decorator_list=[], returns=None,
                           type_comment=None)


def _not(expr: ast.expr) -> ast.Call:
    return _call(_runtime("convert_logical_not"), expr)


def _located(nodes, where: ast.AST):
    """``nodes`` with the first line of ``where`` on every node that has no location (one line:
    Python reports a call spanning lines at the line its callee ends on)."""
    for node in nodes:
        for sub in ast.walk(node):
            if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                sub.lineno = sub.end_lineno = where.lineno
                sub.col_offset = sub.end_col_offset = where.col_offset
    return nodes


def _at(call: ast.Call, where: ast.AST) -> ast.Call:
    """A generated call at ``where``: the call spans it, the helper's name sits on its first line."""
    _located([call.func], where)
    for arg in call.args:
        if isinstance(arg, ast.Lambda):
            _located([arg.args], where)
    return ast.copy_location(call, where)


def _keep(node: ast.stmt) -> ast.stmt:
    """Mark a generated statement that must stay plain Python (a real ``break`` of a Python loop)."""
    node._oar_keep = True
    return node


# ------------------------------------------------------------------------------------------
# scope analysis: which names a block binds, without entering nested scopes
# ------------------------------------------------------------------------------------------
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def walk_scope(nodes):
    """Every node in ``nodes`` (statements or expressions) that belongs to the same scope."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue  # the def's own name is yielded above; its body is another scope
        stack.extend(list(ast.iter_child_nodes(node))[::-1])


def _target_names(target: ast.AST, out: list) -> None:
    if isinstance(target, ast.Name):
        out.append(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _target_names(elt, out)
    elif isinstance(target, ast.Starred):
        _target_names(target.value, out)


def assigned_names(stmts) -> list[str]:
    """The names ``stmts`` bind in their scope, in order of first binding (except-handler names,
    which Python unbinds at the end of the handler, are not counted)."""
    out: list[str] = []
    for node in walk_scope(stmts):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                _target_names(t, out)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            if not isinstance(node, ast.AnnAssign) or node.value is not None:
                _target_names(node.target, out)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            _target_names(node.target, out)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            _target_names(node.optional_vars, out)
        elif isinstance(node, ast.NamedExpr):
            _target_names(node.target, out)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.extend((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not node.name.startswith(FUNC_PREFIX):
                out.append(node.name)
            else:  # a generated function: what it declares nonlocal, it assigns
                for stmt in node.body:
                    if isinstance(stmt, (ast.Nonlocal, ast.Global)):
                        out.extend(stmt.names)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    raise Unsupported(f"'del {t.id}' inside converted control flow", node)
    return list(dict.fromkeys(n for n in out if not n.startswith(FUNC_PREFIX)))


def side_effect(stmts) -> tuple[int, str] | None:
    """The first statement in ``stmts`` that changes a Python object in place (an attribute or
    item assignment, ``lst.append(...)``, ``t.add_(...)``), as (line, source text)."""
    for node in walk_scope(stmts):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, (ast.Attribute, ast.Subscript)) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                    return node.lineno, _text(node)
        if isinstance(node, (ast.Raise, ast.Assert)):
            return node.lineno, _text(node)
        func = node.func if isinstance(node, ast.Call) else None
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "convert_call" \
                and isinstance(func.func.value, ast.Name) and func.func.value.id == RUNTIME:
            func = func.args[0]  # convert_call(obj.method)(...) -- see through pass 1
        if isinstance(func, ast.Attribute):
            attr = func.attr
            if attr in _MUTATORS or (attr.endswith("_") and not attr.endswith("__")):
                return node.lineno, _text(node)
    return None


class _Unconverted(ast.NodeTransformer):
    """``convert_call(f)(...)`` back to ``f(...)``: the user's text, for messages."""

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "convert_call" \
                and isinstance(func.func.value, ast.Name) and func.func.value.id == RUNTIME:
            node.func = func.args[0]
        return node


def _text(node: ast.AST) -> str:
    return ast.unparse(_Unconverted().visit(copy.deepcopy(node))).splitlines()[0]


def _effect_node(stmts, names=(), scope: _Scope | None = None) -> ast.expr:
    found = side_effect(stmts)
    if found is None and scope is not None:
        # Assigning a global or an enclosing function's variable changes state outside the function.
        outer = [n for n in names if n in scope.globals or n in scope.nonlocals]
        if outer:
            kind = "global" if outer[0] in scope.globals else "nonlocal"
            found = (stmts[0].lineno, f"{outer[0]} = ... ({kind} variable)")
    return _const(None) if found is None else ast.Tuple(elts=[_const(found[0]), _const(found[1])], ctx=ast.Load())


def _sets(stmt: ast.stmt, flag: str) -> bool:
    """Whether ``stmt`` may set ``flag``."""
    for node in walk_scope([stmt]):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == flag for t in node.targets):
            return True
    return False


def guard_rest(stmts: list[ast.stmt], flag: str, into_loops: bool = False) -> list[ast.stmt]:
    """``stmts`` with everything after a statement that may set ``flag`` wrapped in
    ``if not flag:``, recursively through if/with/try blocks (and loops when ``into_loops``)."""
    out: list[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == flag:
            out.append(stmt)
            return out  # set unconditionally: the rest of the block never runs
        _guard_children(stmt, flag, into_loops)
        out.append(stmt)
        if _sets(stmt, flag):
            rest = guard_rest(stmts[i + 1:], flag, into_loops)
            if rest:
                out.extend(_located([ast.If(test=_not(_name(flag)), body=rest, orelse=[])], stmts[i + 1]))
            return out
    return out


def _guard_children(stmt: ast.stmt, flag: str, into_loops: bool) -> None:
    if isinstance(stmt, (ast.If, ast.With, ast.AsyncWith)):
        stmt.body = guard_rest(stmt.body, flag, into_loops)
        if isinstance(stmt, ast.If):
            stmt.orelse = guard_rest(stmt.orelse, flag, into_loops)
    elif isinstance(stmt, ast.Try):
        stmt.body = guard_rest(stmt.body, flag, into_loops)
        stmt.orelse = guard_rest(stmt.orelse, flag, into_loops)
        for h in stmt.handlers:
            h.body = guard_rest(h.body, flag, into_loops)
    elif into_loops and isinstance(stmt, (ast.While, ast.For)):
        stmt.body = guard_rest(stmt.body, flag, into_loops)


def _blocks(stmt: ast.stmt, loops: bool):
    """The statement lists directly inside ``stmt`` (not inside nested loops unless ``loops``)."""
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, ast.Try):
        return [stmt.body, stmt.orelse, stmt.finalbody, *[h.body for h in stmt.handlers]]
    if loops and isinstance(stmt, (ast.While, ast.For, ast.AsyncFor)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.Match):
        return [c.body for c in stmt.cases]
    return []


def _find(stmts, kinds, loops: bool) -> list[ast.stmt]:
    """Statements of ``kinds`` in ``stmts`` and their if/with/try blocks (and loops when ``loops``)."""
    found = []
    for stmt in stmts:
        if isinstance(stmt, kinds):
            found.append(stmt)
        for block in _blocks(stmt, loops):
            found.extend(_find(block, kinds, loops))
    return found


# ------------------------------------------------------------------------------------------
# pass 1: expressions
# ------------------------------------------------------------------------------------------
class ExpressionTransformer(ast.NodeTransformer):
    """``and``/``or``/``not``/ternaries into runtime calls, calls through ``convert_call``."""

    def visit_ClassDef(self, node):
        return node  # a class body is not converted

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if _binds_in_place(node.values[1:]):
            return node
        helper = "convert_logical_and" if isinstance(node.op, ast.And) else "convert_logical_or"
        return _at(_call(_runtime(helper), *[_lambda(v) for v in node.values]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _at(_not(node.operand), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _binds_in_place([node.body, node.orelse]):
            return node
        return _at(_call(_runtime("convert_ifelse_expr"), node.test, _lambda(node.body), _lambda(node.orelse)), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("locals", "vars") and not node.args:
            raise Unsupported(f"{func.id}() inside a converted function", node)
        if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1 and not node.keywords \
                and not isinstance(node.args[0], ast.Starred):
            return _at(_call(_runtime("convert_len"), func, node.args[0]), node)
        if isinstance(func, ast.Name) and func.id in _CALLS_KEPT:
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == RUNTIME:
            return node
        node.func = _at(_call(_runtime("convert_call"), func), func)
        return node


def _own_bindings(stmt: ast.stmt) -> list[str]:
    """The names ``stmt`` itself binds (not the statements in its blocks)."""
    out: list[str] = []
    if isinstance(stmt, (ast.Assign, ast.Delete)):
        for t in stmt.targets:
            _target_names(t, out)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        _target_names(stmt.target, out)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            if item.optional_vars is not None:
                _target_names(item.optional_vars, out)
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        out.extend((a.asname or a.name).split(".")[0] for a in stmt.names)
    return out


def note_outer_stores(fdef: ast.FunctionDef, outermost: bool = True) -> None:
    """Before each statement of ``fdef`` that assigns a name it declares ``global`` (or, for the
    converted function itself, ``nonlocal``: a nested def's nonlocal is the function's own local),
    an ``outer_store(name, kind)`` call: the capture breaks there."""
    declared: dict[str, str] = {}
    for node in walk_scope(fdef.body):
        if isinstance(node, ast.Global):
            declared.update(dict.fromkeys(node.names, "global"))
        elif isinstance(node, ast.Nonlocal) and outermost:
            declared.update(dict.fromkeys(node.names, "nonlocal"))

    def rewrite(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                note_outer_stores(stmt, outermost=False)
            for block in _blocks(stmt, loops=True):
                block[:] = rewrite(block)
            for name in _own_bindings(stmt):
                if name in declared:
                    call = _call(_runtime("outer_store"), _const(name), _const(declared[name]))
                    out.extend(_located([ast.Expr(value=call)], stmt))
                    break
            out.append(stmt)
        return out

    fdef.body = rewrite(fdef.body)


def _binds_in_place(exprs) -> bool:
    """Whether wrapping ``exprs`` in lambdas would move a binding (``:=``) into the lambda."""
    return any(isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await))
               for e in exprs for n in ast.walk(e))


# ------------------------------------------------------------------------------------------
# the function pipeline
# ------------------------------------------------------------------------------------------
class FunctionConverter:
    """Runs passes 2-4 over one function and, recursively, the functions defined in it."""

    def __init__(self, shadowed_range: bool):
        self.counter = itertools.count()
        self.shadowed_range = shadowed_range

    def fresh(self, kind: str) -> str:
        return f"{PREFIX}{kind}_{next(self.counter)}"

    def convert(self, fdef: ast.FunctionDef) -> None:
        for node in walk_scope(fdef.body):
            if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
                raise Unsupported("a generator or coroutine", node)
        fdef.body = self.lower_returns(fdef.body)
        fdef.body = self.lower_loops(fdef.body)
        params = [a.arg for a in (*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs)]
        params += [a.arg for a in (fdef.args.vararg, fdef.args.kwarg) if a is not None]
        scope = _Scope(fdef.body, params)
        body = self.lower_control_flow(fdef.body, scope)
        # Variables the generated functions share must exist in this function for ``nonlocal``;
        # they start undefined, as in Python.
        init = [_assign(n, _call(_runtime("UndefinedVar"), _const(n)))
                for n in scope.shared if n in scope.locals and n not in params]
        fdef.body = _located(init, fdef.body[0] if fdef.body else fdef) + body if init else body

    # -- pass 2: one exit ----------------------------------------------------------------------
    def lower_returns(self, body: list[ast.stmt]) -> list[ast.stmt]:
        body = _fold_into_else(body)
        returns = _find(body, ast.Return, loops=True)
        if not returns:
            return body
        if len(returns) == 1 and body[-1] is returns[0]:
            if returns[0].value is not None:  # a variable without a value raises its clear error
                returns[0].value = _at(_call(_runtime("return_value"), returns[0].value), returns[0])
            return body
        for stmt in _find(body, ast.Try, loops=True):
            if _find(stmt.finalbody, ast.Return, loops=True):
                raise Unsupported("return inside finally", stmt)
        if not _always_returns(body):  # falling off the end returns None: say so, for every path
            body = body + _located([ast.Return(value=None)], body[-1])
        flag, value = self.fresh("rflag"), RETURN_VALUE_PREFIX + str(next(self.counter))

        def rewrite(stmts: list[ast.stmt], in_loop: bool) -> list[ast.stmt]:
            out: list[ast.stmt] = []
            for stmt in stmts:
                if isinstance(stmt, ast.Return):
                    done = [_assign(value, stmt.value or _const(None)), _assign(flag, _const(True))]
                    out.extend(_located(done + ([ast.Break()] if in_loop else []), stmt))
                    return out  # the rest of the block never runs
                if isinstance(stmt, (ast.While, ast.For)):
                    has_return = bool(_find(stmt.body, ast.Return, loops=True))
                    stmt.body = rewrite(stmt.body, True)
                    stmt.orelse = rewrite(stmt.orelse, in_loop)
                    out.append(stmt)
                    if has_return and in_loop:  # leave the enclosing loop too
                        out.extend(_located([ast.If(test=_name(flag), body=[ast.Break()], orelse=[])], stmt))
                    continue
                if isinstance(stmt, ast.Match) and _find([stmt], ast.Return, loops=True):
                    raise Unsupported("return inside match", stmt)
                if isinstance(stmt, ast.Try):
                    stmt.body = rewrite(stmt.body, in_loop)
                    stmt.orelse = rewrite(stmt.orelse, in_loop)
                    for h in stmt.handlers:
                        h.body = rewrite(h.body, in_loop)
                elif isinstance(stmt, ast.If):
                    stmt.body, stmt.orelse = rewrite(stmt.body, in_loop), rewrite(stmt.orelse, in_loop)
                elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                    stmt.body = rewrite(stmt.body, in_loop)
                out.append(stmt)
            return out

        first = body[0]
        start = _located([_assign(flag, _const(False)),
                          _assign(value, _call(_runtime("UndefinedVar"), _const("the return value")))], first)
        end = _located([ast.Return(value=_call(_runtime("return_value"), _name(value), _const(True)))], body[-1])
        return start + guard_rest(rewrite(body, False), flag) + end

    # -- pass 3: loops ---------------------------------------------------------------------------
    def lower_loops(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                stmt.body, stmt.orelse = self.lower_loops(stmt.body), self.lower_loops(stmt.orelse)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                stmt.body = self.lower_loops(stmt.body)
            elif isinstance(stmt, ast.Try):
                stmt.body, stmt.orelse = self.lower_loops(stmt.body), self.lower_loops(stmt.orelse)
                stmt.finalbody = self.lower_loops(stmt.finalbody)
                for h in stmt.handlers:
                    h.body = self.lower_loops(h.body)
            elif isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    case.body = self.lower_loops(case.body)
            elif isinstance(stmt, (ast.While, ast.For)):
                stmt.body, stmt.orelse = self.lower_loops(stmt.body), self.lower_loops(stmt.orelse)
                out.extend(self._lower_for(stmt) if isinstance(stmt, ast.For) else self._lower_while(stmt))
                continue
            elif isinstance(stmt, ast.AsyncFor):
                raise Unsupported("async for", stmt)
            out.append(stmt)
        return out

    def _is_range(self, it: ast.expr) -> bool:
        return (not self.shadowed_range and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 3
                and not any(isinstance(a, ast.Starred) for a in it.args))

    def _lower_for(self, loop: ast.For) -> list[ast.stmt]:
        if self._is_range(loop.iter):
            # for i in range(a, b, c)  ->  start/stop/step once, then a while over a hidden index
            # that moves on first thing in the body (so ``continue`` cannot skip it).
            n = next(self.counter)
            start, stop, step, idx = (f"{PREFIX}{k}_{n}" for k in ("start", "stop", "step", "idx"))
            head = ast.Assign(targets=[ast.Tuple(elts=[_name(start, True), _name(stop, True), _name(step, True)],
                                                 ctx=ast.Store())],
                              value=_call(_runtime("range_args"), _name("range"), *loop.iter.args))
            body = [ast.Assign(targets=[loop.target], value=_name(idx)),
                    _assign(idx, ast.BinOp(left=_name(idx), op=ast.Add(), right=_name(step)))]
            loop_ = ast.While(test=_call(_runtime("range_cond"), _name(idx), _name(stop), _name(step)),
                              body=_located(body, loop) + loop.body, orelse=loop.orelse)
            return _located([head, _assign(idx, _name(start))], loop) + self._lower_while(
                ast.copy_location(loop_, loop))
        breaks, continues = _find(loop.body, ast.Break, False), _find(loop.body, ast.Continue, False)
        if not breaks and not continues:
            return [loop]
        if breaks and loop.orelse:
            raise Unsupported("for ... else with break", loop)
        # A Python for: a break that depends on a tensor cannot stop it, so every later
        # iteration is guarded by the flag; a break on a Python value stops it as usual.
        if not breaks:
            loop.body = self._lower_jumps(loop.body, None, loop)
            return [loop]
        brk = self.fresh("brk")
        body = self._lower_jumps(loop.body, brk, loop)
        check = _keep(ast.If(test=_call(_runtime("is_python_true"), _name(brk)), body=[ast.Break()], orelse=[]))
        loop.body = _located([ast.If(test=_not(_name(brk)), body=body, orelse=[]), check], loop)
        return _located([_assign(brk, _const(False))], loop) + [loop]

    def _lower_while(self, loop: ast.While) -> list[ast.stmt]:
        breaks, continues = _find(loop.body, ast.Break, False), _find(loop.body, ast.Continue, False)
        orelse, loop.orelse = loop.orelse, []
        if breaks and orelse:
            raise Unsupported("while ... else with break", loop)
        if not breaks and not continues:
            return [loop, *orelse]
        brk = self.fresh("brk") if breaks else None
        loop.body = self._lower_jumps(loop.body, brk, loop)
        before = []
        if brk is not None:
            before = _located([_assign(brk, _const(False))], loop)
            loop.test = ast.copy_location(
                _call(_runtime("convert_logical_and"), _lambda(_not(_name(brk))), _lambda(loop.test)), loop.test)
        return before + [loop, *orelse]

    def _lower_jumps(self, body: list[ast.stmt], brk: str | None, loop: ast.stmt) -> list[ast.stmt]:
        """``break`` -> ``brk = True`` and ``continue`` -> a per-iteration flag, each guarding the
        rest of the body."""
        cont = self.fresh("cont") if _find(body, ast.Continue, False) else None

        def replace(stmts):
            out = []
            for stmt in stmts:
                if isinstance(stmt, ast.Break) and not getattr(stmt, "_oar_keep", False):
                    out.append(ast.copy_location(_assign(brk, _const(True)), stmt))
                    continue
                if isinstance(stmt, ast.Continue):
                    out.append(ast.copy_location(_assign(cont, _const(True)), stmt))
                    continue
                if isinstance(stmt, ast.If) and getattr(stmt, "_oar_keep", False):
                    out.append(stmt)
                    continue
                for block in _blocks(stmt, loops=False):
                    block[:] = replace(block)
                out.append(stmt)
            return out

        body = replace(body)
        if brk is not None:
            body = guard_rest(body, brk)
        if cont is not None:
            body = _located([_assign(cont, _const(False))], loop) + guard_rest(body, cont)
        return body

    # -- pass 4: if and while into functions -------------------------------------------------
    def lower_control_flow(self, stmts: list[ast.stmt], scope: _Scope) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            if isinstance(stmt, ast.If) and not getattr(stmt, "_oar_keep", False):
                out.extend(self._lower_if(stmt, scope))
            elif isinstance(stmt, ast.While):
                out.extend(self._lower_while_loop(stmt, scope))
            elif isinstance(stmt, ast.If):
                out.append(stmt)
            elif isinstance(stmt, (ast.For, ast.With, ast.AsyncWith, ast.Try, ast.Match)):
                for block in _blocks(stmt, loops=True):
                    block[:] = self.lower_control_flow(block, scope)
                out.append(stmt)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if isinstance(stmt, ast.FunctionDef):
                    FunctionConverter.convert(self, stmt)  # its own scope, the same counter
                out.append(stmt)
            else:
                out.append(stmt)
        return out

    def _shared(self, names: list[str], scope: _Scope) -> list[ast.stmt]:
        """``nonlocal``/``global`` declarations for ``names`` in a generated function."""
        scope.shared.update(names)
        local = [n for n in names if n not in scope.globals]
        glob = [n for n in names if n in scope.globals]
        return ([ast.Nonlocal(names=local)] if local else []) + ([ast.Global(names=glob)] if glob else [])

    def _accessors(self, names: list[str], scope: _Scope, n: int) -> tuple[list[ast.stmt], str, str]:
        get, set_ = f"{FUNC_PREFIX}get_{n}", f"{FUNC_PREFIX}set_{n}"
        values = f"{PREFIX}values"
        getter = _def(get, [ast.Return(value=ast.Tuple(elts=[_name(v) for v in names], ctx=ast.Load()))])
        unpack = ast.Assign(targets=[ast.Tuple(elts=[_name(v, True) for v in names], ctx=ast.Store())],
                            value=_name(values))
        setter = _def(set_, self._shared(names, scope) + ([unpack] if names else []), (values,))
        return [getter, setter], get, set_

    def _lower_if(self, stmt: ast.If, scope: _Scope) -> list[ast.stmt]:
        true_names, false_names = assigned_names(stmt.body), assigned_names(stmt.orelse)
        names = list(dict.fromkeys(true_names + false_names))
        effect = _effect_node(stmt.body + stmt.orelse, names, scope)
        body = self.lower_control_flow(stmt.body, scope)
        orelse = self.lower_control_flow(stmt.orelse, scope)
        n = next(self.counter)
        true_fn, false_fn = f"{FUNC_PREFIX}true_{n}", f"{FUNC_PREFIX}false_{n}"
        defs = [_def(true_fn, self._shared(names, scope) + body), _def(false_fn, self._shared(names, scope) + orelse)]
        accessors, get, set_ = self._accessors(names, scope, n)
        exits = ast.Tuple(elts=[_const(_always_exits(stmt.body)), _const(_always_exits(stmt.orelse))], ctx=ast.Load())
        call = _call(_runtime("convert_ifelse"), stmt.test, _name(true_fn), _name(false_fn), _name(get), _name(set_),
                     _names_tuple(names), _names_tuple(true_names), _names_tuple(false_names), effect, exits)
        return _located(defs + accessors + [ast.Expr(value=call)], stmt)

    def _lower_while_loop(self, stmt: ast.While, scope: _Scope) -> list[ast.stmt]:
        names = assigned_names(stmt.body)
        effect = _effect_node(stmt.body, names, scope)
        body = self.lower_control_flow(stmt.body, scope)
        n = next(self.counter)
        cond_fn, body_fn = f"{FUNC_PREFIX}cond_{n}", f"{FUNC_PREFIX}body_{n}"
        defs = [_def(cond_fn, [ast.Return(value=stmt.test)]), _def(body_fn, self._shared(names, scope) + body)]
        accessors, get, set_ = self._accessors(names, scope, n)
        call = _call(_runtime("convert_while_loop"), _name(cond_fn), _name(body_fn), _name(get), _name(set_),
                     _names_tuple(names), effect)
        return _located(defs + accessors + [ast.Expr(value=call)], stmt)


def _fold_into_else(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """``if c: ...return a`` followed by more statements -> those statements in the ``else``:
    the same code, and one ``cond`` instead of a second one guarding the rest."""
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.If):
            stmt.body = _fold_into_else(stmt.body)
            stmt.orelse = _fold_into_else(stmt.orelse)
            if not stmt.orelse and i + 1 < len(stmts) and _always_returns(stmt.body):
                stmt.orelse = _fold_into_else(stmts[i + 1:])
                return stmts[:i + 1]
    return stmts


_EXIT_FLAGS = tuple(PREFIX + k for k in ("rflag_", "brk_", "cont_"))


def _always_exits(stmts: list[ast.stmt]) -> bool:
    """Whether every path through ``stmts`` (after passes 2 and 3) sets a return, break or
    continue flag last (or raises)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Raise):
        return True
    if isinstance(last, ast.Assign) and len(last.targets) == 1 and isinstance(last.targets[0], ast.Name):
        return last.targets[0].id.startswith(_EXIT_FLAGS) and isinstance(last.value, ast.Constant) \
            and last.value.value is True
    if isinstance(last, ast.If):
        return _always_exits(last.body) and _always_exits(last.orelse)
    return False


def _always_returns(stmts: list[ast.stmt]) -> bool:
    """Whether every path through ``stmts`` ends in a ``return`` (or raise)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _names_tuple(names) -> ast.Tuple:
    return ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load())


class _Scope:
    """What one function binds: its locals, what it declares global or nonlocal, and the names
    that generated functions share with it."""

    def __init__(self, body: list[ast.stmt], params: list[str]):
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        for node in walk_scope(body):
            if isinstance(node, ast.Global):
                self.globals.update(node.names)
            elif isinstance(node, ast.Nonlocal):
                self.nonlocals.update(node.names)
        self.locals = (set(assigned_names(body)) | set(params)) - self.globals - self.nonlocals
        self.shared: set[str] = set()


def mangle_private_names(tree: ast.AST, class_name: str) -> None:
    """Apply the class-private name mangling (``self.__x`` -> ``self._Cls__x``) that compiling
    a method inside its class does; converted code is compiled outside the class."""
    stripped = class_name.lstrip("_")
    if not stripped:
        return

    def mangle(name: str) -> str:
        if name.startswith("__") and not name.endswith("__") and "." not in name:
            return f"_{stripped}{name}"
        return name

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            node.attr = mangle(node.attr)
        elif isinstance(node, ast.Name):
            node.id = mangle(node.id)
        elif isinstance(node, ast.arg):
            node.arg = mangle(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            node.name = mangle(node.name)
