"""Calls through objects of the submission's classes, as the engine walks a file (a mixin of
`engine.Engine`; `helper_classes` builds the object model it reads): a method's receiver and annotated
parameters bound to objects, class bodies kept out of the module's names, and the arguments of calls through
objects, through a class or of a constructor recorded for the helper-module pass."""

from __future__ import annotations

import libcst as cst

from evidence.static.helper_args import call_arguments
from evidence.static.helper_classes import Instance, annotation_class
from evidence.static.records import Record
from evidence.static.shapes import Binding


class ObjectCalls:
    """Engine's handlers for objects; reads `objects`, `file`, `scopes`, `function_stack`, `value`, `ev.records`
    and writes `helper_calls`, `method_calls` and `_classes` of the engine."""

    def _bind_objects(self, node: cst.FunctionDef, scope: dict[str, Binding], owner: str | None) -> None:
        """A method's receiver is the object its calls agree on, else one of its own class; a parameter
        the calls leave unknown but annotated with a submission class is an object of that class."""
        p = node.params
        positional = [*p.posonly_params, *p.params]
        if owner is not None and positional and not any(
                isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators):
            first = positional[0].name.value
            if not isinstance(scope[first].value, (Instance, Record)):
                classmethod = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod"
                                  for d in node.decorators)
                scope[first] = Binding(None if classmethod else Instance((self.file, owner)), names=frozenset({first}))
        for q in (*positional, *p.kwonly_params):
            name = q.name.value
            if q.annotation is not None and scope.get(name) is not None and scope[name].value is None:
                cls = annotation_class(q.annotation.annotation, self.objects.classes)
                if cls is not None:
                    scope[name] = Binding(Instance(cls), names=frozenset({name}))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        # a class body binds names in its own namespace, never in the module's
        self._classes.append(node.name.value if not self.function_stack else "")
        self.scopes.append({})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()
        self.scopes.pop()

    def _method_call(self, node: cst.Call) -> None:
        """Record the arguments of a call through an object (`mgr.alloc(...)`), of a method named through
        its class (`Tiles.plan(...)`) or of a constructor (`Mgr(...)` runs `__init__` on a new object)."""
        func, receiver, through_class = node.func, None, False
        if isinstance(func, cst.Name) and func.value in self.objects.classes and func.value not in self.ev.records:
            cls, name, receiver = self.objects.classes[func.value], "__init__", Instance(self.objects.classes[func.value])
        elif isinstance(func, cst.Attribute):
            owner = self.value(func.value)
            if isinstance(owner, Instance):
                cls, name, receiver = owner.cls, func.attr.value, owner
            elif isinstance(owner, Record) and owner.cls in self.objects.classes:  # a config dataclass's method
                cls, name, receiver = self.objects.classes[owner.cls], func.attr.value, owner
            elif isinstance(func.value, cst.Name) and func.value.value in self.objects.classes:
                cls, name, through_class = self.objects.classes[func.value.value], func.attr.value, True
            else:  # a receiver whose class only the submission's code decides (`helper_types`)
                cls, name = None, func.attr.value
        else:
            return
        ref = self.objects.method(cls, name) if cls is not None else self.objects.method_at(self.lines(node)[0], name)
        if ref is None:
            return
        params = ref.params
        if through_class and ref.receiver is not None and ref.kind == "instance":
            params = (ref.receiver, *params)  # `Cls.meth(obj, ...)` passes the receiver itself
        args = call_arguments(node, params, self.value, ref.defaults)
        if receiver is not None and ref.receiver is not None:
            args[ref.receiver] = receiver
        if ref.module == self.file:
            self.helper_calls.setdefault(ref.qualname, []).append(args)
        else:
            self.method_calls.setdefault((ref.module, ref.qualname), []).append(args)
