/* The dataflow tracer's per-op work, compiled: a CPython extension (`_tracer_core`) with the
 * same behaviour as the Python core in _tracer.py (`_PythonCore` there), which stays the
 * reference and the fallback.  tests/test_tracer_core.py holds the two to each other.
 *
 *   TagTable   tensor identity -> tag, an entry removed when its tensor is freed (each
 *              entry is a weak reference that carries its key and its tag)
 *   Core       the TorchFunctionMode's `__torch_function__` and the recording of one op
 *              (`_record` and `_tags` of the Python core), over the same state, which the
 *              Python side of DataflowTracer reads and writes through these attributes:
 *              stack, table, owners, parents, writes, seq, last_write, dispatched,
 *              wrote_untagged, paused, failure, observer, observed, before_write, _kinds
 *
 * A traced forward pass runs thousands of torch calls through the mode; in Python each cost
 * several microseconds of interpreter work on top of torch's own dispatch.  `setup()` hands
 * over what the core needs from Python: torch.Tensor, torch.Size and the op classifier.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

enum { NORMAL = 0, INPLACE = 1, IGNORE = 2 };

static PyObject *TensorType, *SizeType, *OpKind; /* from setup() */
static PyObject *s_out, *s_inplace, *s_observe, *s_untyped_storage, *s_data_ptr;

static inline int is_tensor(PyObject *o) {
    return TensorType != NULL && PyObject_TypeCheck(o, (PyTypeObject *)TensorType);
}

static inline int is_sequence(PyObject *o) { return PyTuple_Check(o) || PyList_Check(o); }

/* ------------------------------------------------------------------------------ TagTable */

typedef struct {
    PyWeakReference ref;
    PyObject *key; /* id(tensor), the table's key */
    PyObject *tag;
} Entry;

static PyTypeObject EntryType;

static int entry_traverse(Entry *self, visitproc visit, void *arg) {
    Py_VISIT(self->tag);
    return _PyWeakref_RefType.tp_traverse((PyObject *)self, visit, arg);
}

static int entry_clear(Entry *self) {
    Py_CLEAR(self->tag);
    Py_CLEAR(self->key);
    return _PyWeakref_RefType.tp_clear((PyObject *)self);
}

static void entry_dealloc(Entry *self) {
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->tag);
    Py_CLEAR(self->key);
    _PyWeakref_RefType.tp_dealloc((PyObject *)self);
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "neural_flow_widget._native._tracer_core.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_doc = "A weak reference to a tagged tensor that carries its table key and its tag.",
};

typedef struct {
    PyObject_HEAD
    PyObject *entries; /* dict: id(tensor) -> Entry */
    PyObject *forget;  /* the entries' callback, bound to this table */
} TagTable;

static PyObject *table_forget(PyObject *self, PyObject *ref) {
    TagTable *table = (TagTable *)self;
    if (Py_TYPE(ref) == &EntryType && ((Entry *)ref)->key != NULL) {
        PyObject *key = ((Entry *)ref)->key;
        PyObject *found = PyDict_GetItemWithError(table->entries, key);
        if (found == ref && PyDict_DelItem(table->entries, key) < 0) return NULL;
        if (found == NULL && PyErr_Occurred()) return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef forget_def = {"forget", table_forget, METH_O, NULL};

/* the tag of `tensor` (borrowed), NULL without one; -1 into *failed on an error */
static PyObject *table_lookup(TagTable *table, PyObject *tensor, int *failed) {
    PyObject *key = PyLong_FromVoidPtr(tensor);
    if (key == NULL) {
        *failed = 1;
        return NULL;
    }
    PyObject *entry = PyDict_GetItemWithError(table->entries, key);
    Py_DECREF(key);
    if (entry == NULL) {
        if (PyErr_Occurred()) *failed = 1;
        return NULL;
    }
    return ((Entry *)entry)->tag;
}

/* whether the weak reference `ref` points at `obj` (a live object the caller holds) */
static int refers_to(PyObject *ref, PyObject *obj) {
#if PY_VERSION_HEX >= 0x030D0000 /* (PyWeakref_GET_OBJECT is deprecated from 3.13) */
    PyObject *target = NULL;
    if (PyWeakref_GetRef(ref, &target) < 0) {
        PyErr_Clear();
        return 0;
    }
    Py_XDECREF(target);
    return target == obj;
#else
    return PyWeakref_GET_OBJECT(ref) == obj;
#endif
}

static int table_store(TagTable *table, PyObject *tensor, PyObject *tag) {
    PyObject *key = PyLong_FromVoidPtr(tensor);
    if (key == NULL) return -1;
    PyObject *found = PyDict_GetItemWithError(table->entries, key);
    if (found != NULL && refers_to(found, tensor)) {
        Entry *entry = (Entry *)found;
        Py_INCREF(tag);
        Py_SETREF(entry->tag, tag);
        Py_DECREF(key);
        return 0;
    }
    if (found == NULL && PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    PyObject *args = PyTuple_Pack(2, tensor, table->forget);
    if (args == NULL) {
        Py_DECREF(key);
        return -1;
    }
    Entry *entry = (Entry *)_PyWeakref_RefType.tp_new(&EntryType, args, NULL);
    Py_DECREF(args);
    if (entry == NULL) {
        Py_DECREF(key);
        return -1;
    }
    entry->key = key; /* (the reference made above) */
    Py_INCREF(tag);
    entry->tag = tag;
    int result = PyDict_SetItem(table->entries, key, (PyObject *)entry);
    Py_DECREF(entry);
    return result;
}

static PyObject *table_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    TagTable *self = (TagTable *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->entries = PyDict_New();
    self->forget = PyCFunction_New(&forget_def, (PyObject *)self);
    if (self->entries == NULL || self->forget == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int table_traverse(TagTable *self, visitproc visit, void *arg) {
    Py_VISIT(self->entries);
    Py_VISIT(self->forget);
    return 0;
}

static int table_clear(TagTable *self) {
    Py_CLEAR(self->entries);
    Py_CLEAR(self->forget);
    return 0;
}

static void table_dealloc(TagTable *self) {
    PyObject_GC_UnTrack(self);
    table_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *table_get(PyObject *self, PyObject *tensor) {
    int failed = 0;
    PyObject *tag = table_lookup((TagTable *)self, tensor, &failed);
    if (failed) return NULL;
    if (tag == NULL) Py_RETURN_NONE;
    Py_INCREF(tag);
    return tag;
}

static PyObject *table_set(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "set(tensor, tag) takes two arguments");
        return NULL;
    }
    if (table_store((TagTable *)self, args[0], args[1]) < 0) return NULL;
    Py_RETURN_NONE;
}

static Py_ssize_t table_len(PyObject *self) {
    TagTable *table = (TagTable *)self;
    return table->entries != NULL ? PyDict_Size(table->entries) : 0;
}

static PyMethodDef table_methods[] = {
    {"get", table_get, METH_O, "The tag of a tensor, or None."},
    {"set", (PyCFunction)(void (*)(void))table_set, METH_FASTCALL, "Tag a tensor."},
    {NULL},
};

static PySequenceMethods table_sequence = {.sq_length = table_len};

static PyTypeObject TagTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "neural_flow_widget._native._tracer_core.TagTable",
    .tp_basicsize = sizeof(TagTable),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = table_new,
    .tp_traverse = (traverseproc)table_traverse,
    .tp_clear = (inquiry)table_clear,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
    .tp_as_sequence = &table_sequence,
    .tp_doc = "Tensor identity -> tag; an entry is removed when its tensor is freed.",
};

/* ---------------------------------------------------------------------------------- Core */

typedef struct {
    PyObject_HEAD
    PyObject *stack, *table, *owners, *parents, *writes, *failure, *observer, *observed,
        *before_write, *kinds;
    Py_ssize_t seq, last_write, dispatched;
    char wrote_untagged, paused;
} Core;

/* A growable array of borrowed object pointers (the tensors of one op, their tags). */
typedef struct {
    PyObject **items;
    Py_ssize_t n, cap;
    PyObject *small[16];
} Refs;

static void refs_init(Refs *r) {
    r->items = r->small;
    r->n = 0;
    r->cap = 16;
}

static int refs_add(Refs *r, PyObject *o) {
    if (r->n == r->cap) {
        Py_ssize_t cap = r->cap * 2;
        PyObject **grown = PyMem_Malloc(cap * sizeof(PyObject *));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(grown, r->items, r->n * sizeof(PyObject *));
        if (r->items != r->small) PyMem_Free(r->items);
        r->items = grown;
        r->cap = cap;
    }
    r->items[r->n++] = o;
    return 0;
}

static void refs_free(Refs *r) {
    if (r->items != r->small) PyMem_Free(r->items);
}

/* refs_free for an array that holds its references */
static void refs_release(Refs *r) {
    for (Py_ssize_t i = 0; i < r->n; i++) Py_DECREF(r->items[i]);
    refs_free(r);
}

/* the tensors in `o` (a tensor, or a tuple or list of them: one level) onto `r` */
static int add_tensors(Refs *r, PyObject *o) {
    if (is_tensor(o)) return refs_add(r, o);
    if (is_sequence(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject **items = PySequence_Fast_ITEMS(o);
        for (Py_ssize_t i = 0; i < n; i++)
            if (is_tensor(items[i]) && refs_add(r, items[i]) < 0) return -1;
    }
    return 0;
}

/* tensor.untyped_storage().data_ptr(), as a new reference */
static PyObject *storage_key(PyObject *tensor) {
    PyObject *storage = PyObject_CallMethodNoArgs(tensor, s_untyped_storage);
    if (storage == NULL) return NULL;
    PyObject *key = PyObject_CallMethodNoArgs(storage, s_data_ptr);
    Py_DECREF(storage);
    return key;
}

/* The tags of these tensors and of the in-place writes into their storage since they were
 * tagged, onto `tags` as new references (release them with refs_release). */
static int collect_tags(Core *self, Refs *tensors, Refs *tags) {
    for (Py_ssize_t i = 0; i < tensors->n; i++) {
        PyObject *t = tensors->items[i];
        int failed = 0;
        PyObject *tag = table_lookup((TagTable *)self->table, t, &failed);
        if (failed) return -1;
        Py_ssize_t since;
        if (tag != NULL) {
            if (refs_add(tags, tag) < 0) return -1;
            Py_INCREF(tag);
            since = PyLong_AsSsize_t(PyTuple_GET_ITEM(tag, 0));
            if (since == -1 && PyErr_Occurred()) return -1;
        } else if (self->wrote_untagged) {
            since = -1;
        } else {
            continue; /* a parameter or constant nobody wrote to */
        }
        if (since < self->last_write && PyDict_GET_SIZE(self->writes)) {
            PyObject *key = storage_key(t);
            if (key == NULL) return -1;
            PyObject *writes = PyDict_GetItemWithError(self->writes, key);
            Py_DECREF(key);
            if (writes == NULL) {
                if (PyErr_Occurred()) return -1;
                continue;
            }
            for (Py_ssize_t w = 0; w < PyList_GET_SIZE(writes); w++) {
                PyObject *write = PyList_GET_ITEM(writes, w); /* (seq, tag) */
                Py_ssize_t seq = PyLong_AsSsize_t(PyTuple_GET_ITEM(write, 0));
                if (seq == -1 && PyErr_Occurred()) return -1;
                if (seq > since) {
                    PyObject *written = PyTuple_GET_ITEM(write, 1);
                    if (refs_add(tags, written) < 0) return -1;
                    Py_INCREF(written);
                }
            }
        }
    }
    return 0;
}

/* the op ids of `tags`, each once, in order of first appearance: a new tuple */
static PyObject *joined_ops(Refs *tags) {
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < tags->n; i++)
        total += PyTuple_GET_SIZE(PyTuple_GET_ITEM(tags->items[i], 2));
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    PyObject *seen = total > 32 ? PySet_New(NULL) : NULL; /* (few: compare directly) */
    if (total > 32 && seen == NULL) goto fail;
    for (Py_ssize_t i = 0; i < tags->n; i++) {
        PyObject *ops = PyTuple_GET_ITEM(tags->items[i], 2);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(ops); j++) {
            PyObject *op = PyTuple_GET_ITEM(ops, j);
            int known = 0;
            if (seen != NULL) {
                known = PySet_Contains(seen, op);
                if (known < 0 || (!known && PySet_Add(seen, op) < 0)) goto fail;
            } else {
                for (Py_ssize_t k = 0; k < PyList_GET_SIZE(out) && !known; k++) {
                    PyObject *other = PyList_GET_ITEM(out, k);
                    known = other == op || PyObject_RichCompareBool(other, op, Py_EQ) == 1;
                }
            }
            if (!known && PyList_Append(out, op) < 0) goto fail;
        }
    }
    Py_XDECREF(seen);
    PyObject *tuple = PyList_AsTuple(out);
    Py_DECREF(out);
    return tuple;
fail:
    Py_XDECREF(seen);
    Py_DECREF(out);
    return NULL;
}

static int same_call(PyObject *tag, Py_ssize_t call) {
    Py_ssize_t owner = PyLong_AsSsize_t(PyTuple_GET_ITEM(tag, 1));
    return owner == call;
}

/* owners.append(call); parents.append(parents): the new op's id (a new reference) */
static PyObject *new_op(Core *self, PyObject *call, PyObject *parents) {
    if (PyList_Append(self->owners, call) < 0 || PyList_Append(self->parents, parents) < 0)
        return NULL;
    return PyLong_FromSsize_t(PyList_GET_SIZE(self->owners) - 1);
}

static int among(PyObject *o, Refs *tensors) {
    for (Py_ssize_t i = 0; i < tensors->n; i++)
        if (tensors->items[i] == o) return 1;
    return 0;
}

/* what _PythonCore._record does: tag the op's outputs (and remember an in-place write) */
static int record(Core *self, int kind, PyObject *args, PyObject *kwargs, PyObject *out) {
    Refs outs, ins, tags;
    refs_init(&outs), refs_init(&ins), refs_init(&tags);
    PyObject *target = NULL, *target_tag = NULL, *ops = NULL, *tag = NULL;
    int result = -1;
    if (add_tensors(&outs, out) < 0) goto done;
    PyObject *given = kwargs != NULL ? PyDict_GetItemWithError(kwargs, s_out) : NULL;
    if (given == NULL && PyErr_Occurred()) goto done;
    if (kind == INPLACE || given != NULL) {
        target = given != NULL ? given
                               : (PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : Py_None);
        if (is_tensor(target)) {
            outs.n = 0;
            if (refs_add(&outs, target) < 0) goto done;
        } else if (is_sequence(target)) {
            outs.n = 0;
            if (add_tensors(&outs, target) < 0) goto done;
            target = outs.n ? outs.items[0] : Py_None;
        }
        if (target == Py_None) {
            target = NULL;
        } else {
            int failed = 0;
            target_tag = table_lookup((TagTable *)self->table, target, &failed);
            if (failed) goto done;
        }
    }
    if (outs.n == 0) {
        result = 0;
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
        if (add_tensors(&ins, PyTuple_GET_ITEM(args, i)) < 0) goto done;
    if (kwargs != NULL) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(kwargs, &pos, &k, &v))
            if (add_tensors(&ins, v) < 0) goto done;
    }
    if (collect_tags(self, &ins, &tags) < 0) goto done;
    if (!PyList_Check(self->stack) || PyList_GET_SIZE(self->stack) == 0) {
        PyErr_SetString(PyExc_IndexError, "the tracer's call stack is not a non-empty list");
        goto done;
    }
    PyObject *call = PyList_GET_ITEM(self->stack, PyList_GET_SIZE(self->stack) - 1);
    Py_ssize_t call_id = PyLong_AsSsize_t(call);
    if (call_id == -1 && PyErr_Occurred()) goto done;
    int all_own = tags.n > 0;
    for (Py_ssize_t i = 0; i < tags.n && all_own; i++) all_own = same_call(tags.items[i], call_id);
    if (all_own && tags.n == 1) {
        ops = PyTuple_GET_ITEM(tags.items[0], 2);
        Py_INCREF(ops);
    } else if (all_own) {
        ops = joined_ops(&tags);
    } else {
        PyObject *parents = joined_ops(&tags);
        if (parents == NULL) goto done;
        PyObject *op = new_op(self, call, parents);
        Py_DECREF(parents);
        if (op == NULL) goto done;
        ops = PyTuple_Pack(1, op);
        Py_DECREF(op);
    }
    if (ops == NULL) goto done;
    self->seq += 1;
    PyObject *seq = PyLong_FromSsize_t(self->seq);
    if (seq == NULL) goto done;
    tag = PyTuple_Pack(3, seq, call, ops);
    Py_DECREF(seq);
    if (tag == NULL) goto done;
    for (Py_ssize_t i = 0; i < outs.n; i++) {
        PyObject *o = outs.items[i];
        if ((target != NULL || !among(o, &ins)) && table_store((TagTable *)self->table, o, tag) < 0)
            goto done;
    }
    if (target != NULL) {
        PyObject *key = storage_key(target);
        if (key == NULL) goto done;
        PyObject *writes = PyDict_GetItemWithError(self->writes, key);
        if (writes == NULL) {
            if (PyErr_Occurred() || (writes = PyList_New(0)) == NULL ||
                PyDict_SetItem(self->writes, key, writes) < 0) {
                Py_XDECREF(writes);
                Py_DECREF(key);
                goto done;
            }
            Py_DECREF(writes); /* (the dict holds it) */
        }
        Py_DECREF(key);
        PyObject *entry = Py_BuildValue("(nO)", self->seq, tag);
        if (entry == NULL || PyList_Append(writes, entry) < 0) {
            Py_XDECREF(entry);
            goto done;
        }
        Py_DECREF(entry);
        self->last_write = self->seq;
        if (target_tag == NULL) self->wrote_untagged = 1;
    }
    result = 0;
done:
    Py_XDECREF(ops);
    Py_XDECREF(tag);
    refs_free(&outs), refs_free(&ins), refs_release(&tags);
    return result;
}

static int op_kind(Core *self, PyObject *func) {
    PyObject *known = PyDict_GetItemWithError(self->kinds, func);
    if (known == NULL) {
        if (PyErr_Occurred()) return -1;
        known = PyObject_CallOneArg(OpKind, func);
        if (known == NULL) return -1;
        int stored = PyDict_SetItem(self->kinds, func, known);
        long kind = PyLong_AsLong(known);
        Py_DECREF(known);
        return stored < 0 ? -1 : (int)kind;
    }
    return (int)PyLong_AsLong(known);
}

/* __torch_function__(func, types, args=(), kwargs=None): runs the op, then records it */
static PyObject *core_torch_function(PyObject *op, PyObject *const *argv, Py_ssize_t n) {
    Core *self = (Core *)op;
    self->dispatched += 1;
    if (n < 2 || n > 4) {
        PyErr_SetString(PyExc_TypeError, "__torch_function__(func, types, args=(), kwargs=None)");
        return NULL;
    }
    PyObject *func = argv[0];
    PyObject *args = n > 2 ? argv[2] : NULL, *kwargs = n > 3 ? argv[3] : NULL;
    PyObject *made_args = NULL;
    if (args == NULL) {
        args = made_args = PyTuple_New(0);
    } else if (!PyTuple_Check(args)) {
        args = made_args = PySequence_Tuple(args);
    } else {
        Py_INCREF(args), made_args = args;
    }
    if (args == NULL) return NULL;
    if (kwargs == Py_None) kwargs = NULL;
    if (kwargs != NULL && !PyDict_Check(kwargs)) {
        Py_DECREF(made_args);
        PyErr_SetString(PyExc_TypeError, "__torch_function__: kwargs must be a dict");
        return NULL;
    }
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) == 0) kwargs = NULL;
    PyObject *out = NULL, *held_kwargs = kwargs;
    Py_XINCREF(held_kwargs);
    int kind = op_kind(self, func);
    if (kind < 0 && PyErr_Occurred()) goto done;
    int has_out = 0;
    if (kwargs != NULL) {
        PyObject *inplace = PyDict_GetItemWithError(kwargs, s_inplace);
        if (inplace == NULL && PyErr_Occurred()) goto done;
        if (kind == NORMAL && inplace == Py_True) kind = INPLACE;
        has_out = PyDict_Contains(kwargs, s_out);
        if (has_out < 0) goto done;
    }
    if (self->before_write != Py_None && (kind == INPLACE || has_out)) {
        PyObject *r = PyObject_CallNoArgs(self->before_write); /* (once: it unsets itself) */
        if (r == NULL) goto done;
        Py_DECREF(r);
    }
    out = PyObject_Call(func, args, kwargs);
    if (out == NULL || self->paused) goto done;
    if (kind == NORMAL && !is_tensor(out) && !is_sequence(out) && !has_out)
        kind = IGNORE; /* x.dtype, x.device, x.dim(): nothing to record */
    else if (kind == NORMAL && (PyObject *)Py_TYPE(out) == SizeType)
        kind = IGNORE; /* x.shape */
    if (kind != IGNORE && record(self, kind, args, kwargs, out) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            Py_CLEAR(out);
            goto done;
        }
        PyObject *type, *value, *traceback; /* never break the user's forward */
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (traceback != NULL && value != NULL) PyException_SetTraceback(value, traceback);
        Py_XDECREF(type), Py_XDECREF(traceback);
        Py_XSETREF(self->failure, value != NULL ? value : Py_NewRef(Py_None));
        self->paused = 1;
    }
    if (self->observed != Py_None) {
        int watched = PyAnySet_Check(self->observed) ? PySet_Contains(self->observed, func)
                                                    : PySequence_Contains(self->observed, func);
        if (watched < 0) {
            Py_CLEAR(out);
            goto done;
        }
        if (watched) {
            if (held_kwargs == NULL && (held_kwargs = PyDict_New()) == NULL) {
                Py_CLEAR(out);
                goto done;
            }
            PyObject *r = PyObject_CallMethodObjArgs(self->observer, s_observe, func, args,
                                                     held_kwargs, out, NULL);
            if (r == NULL) {
                Py_CLEAR(out);
                goto done;
            }
            Py_DECREF(r);
        }
    }
done:
    Py_DECREF(made_args);
    Py_XDECREF(held_kwargs);
    return out;
}

/* _record(kind, args, kwargs, out): record one op that ran (the call tracker records a call of
 * an opaque leaf module this way, as one op) */
static PyObject *core_record(PyObject *op, PyObject *const *argv, Py_ssize_t n) {
    if (n != 4 || !PyLong_Check(argv[0]) || !PyTuple_Check(argv[1]) ||
        (argv[2] != Py_None && !PyDict_Check(argv[2]))) {
        PyErr_SetString(PyExc_TypeError, "_record(kind: int, args: tuple, kwargs: dict, out)");
        return NULL;
    }
    long kind = PyLong_AsLong(argv[0]);
    PyObject *kwargs = argv[2] != Py_None && PyDict_GET_SIZE(argv[2]) ? argv[2] : NULL;
    if (record((Core *)op, (int)kind, argv[1], kwargs, argv[3]) < 0) return NULL;
    Py_RETURN_NONE;
}

/* collect_tags of a Python sequence of tensors, onto `tags` (release them with refs_release) */
static int tags_of_sequence(Core *self, PyObject *tensors, Refs *tags) {
    PyObject *seq = PySequence_Fast(tensors, "takes a sequence of tensors");
    if (seq == NULL) return -1;
    Refs given;
    refs_init(&given);
    int result = -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
        if (refs_add(&given, PySequence_Fast_GET_ITEM(seq, i)) < 0) goto done;
    result = collect_tags(self, &given, tags);
done:
    refs_free(&given);
    Py_DECREF(seq);
    return result;
}

/* _tags(tensors): the tags behind these tensors (see collect_tags), as a list */
static PyObject *core_tags(PyObject *op, PyObject *tensors) {
    Refs tags;
    refs_init(&tags);
    PyObject *out = NULL;
    if (tags_of_sequence((Core *)op, tensors, &tags) == 0 && (out = PyList_New(tags.n)) != NULL)
        for (Py_ssize_t i = 0; i < tags.n; i++) PyList_SET_ITEM(out, i, Py_NewRef(tags.items[i]));
    refs_release(&tags);
    return out;
}

/* ops_of(tensors): the op ids behind these tensors, each once, in order (see collect_tags) */
static PyObject *core_ops_of(PyObject *op, PyObject *tensors) {
    Refs tags;
    refs_init(&tags);
    PyObject *out = NULL;
    if (tags_of_sequence((Core *)op, tensors, &tags) == 0) /* (one tag: its ops as they are) */
        out = tags.n == 1 ? Py_NewRef(PyTuple_GET_ITEM(tags.items[0], 2)) : joined_ops(&tags);
    refs_release(&tags);
    return out;
}

static int core_reset(Core *self) {
    Py_XSETREF(self->table, TagTableType.tp_new(&TagTableType, NULL, NULL));
    Py_XSETREF(self->owners, PyList_New(0));
    Py_XSETREF(self->parents, PyList_New(0));
    Py_XSETREF(self->writes, PyDict_New());
    Py_XSETREF(self->kinds, PyDict_New());
    Py_XSETREF(self->observed, PyFrozenSet_New(NULL));
    Py_XSETREF(self->stack, PyList_New(0));
    if (!self->table || !self->owners || !self->parents || !self->writes || !self->kinds ||
        !self->observed || !self->stack)
        return -1;
    Py_XSETREF(self->failure, Py_NewRef(Py_None));
    Py_XSETREF(self->observer, Py_NewRef(Py_None));
    Py_XSETREF(self->before_write, Py_NewRef(Py_None));
    self->seq = self->dispatched = 0;
    self->last_write = -1;
    self->wrote_untagged = self->paused = 0;
    return 0;
}

/* (the state is made by core_new: __init__ only checks that nothing was passed) */
static int core_init(PyObject *op, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "the tracer core takes no arguments");
        return -1;
    }
    return 0;
}

static PyObject *core_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Core *self = (Core *)type->tp_alloc(type, 0);
    if (self != NULL && core_reset(self) < 0) Py_CLEAR(self);
    return (PyObject *)self;
}

#define CORE_FIELDS(X)                                                                         \
    X(stack) X(table) X(owners) X(parents) X(writes) X(failure) X(observer) X(observed)        \
        X(before_write) X(kinds)

static int core_traverse(Core *self, visitproc visit, void *arg) {
#define VISIT(f) Py_VISIT(self->f);
    CORE_FIELDS(VISIT)
#undef VISIT
    return 0;
}

static int core_clear(Core *self) {
#define CLEAR(f) Py_CLEAR(self->f);
    CORE_FIELDS(CLEAR)
#undef CLEAR
    return 0;
}

static void core_dealloc(Core *self) {
    PyObject_GC_UnTrack(self);
    core_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef core_methods[] = {
    {"__torch_function__", (PyCFunction)(void (*)(void))core_torch_function, METH_FASTCALL,
     "Run the op, then record which op made each tensor it returned."},
    {"_tags", core_tags, METH_O, "The tags behind these tensors, in-place writes included."},
    {"ops_of", core_ops_of, METH_O,
     "The op-graph nodes that produced these tensors (in-place writes included)."},
    {"_record", (PyCFunction)(void (*)(void))core_record, METH_FASTCALL,
     "Record one op that ran: _record(kind, args, kwargs, out)."},
    {NULL},
};

/* (T_OBJECT_EX: deleting or reading an unset field raises; the core never leaves one unset) */
static PyMemberDef core_members[] = {
    {"stack", T_OBJECT_EX, offsetof(Core, stack), 0, NULL},
    {"table", T_OBJECT_EX, offsetof(Core, table), READONLY, NULL},
    {"owners", T_OBJECT_EX, offsetof(Core, owners), READONLY, NULL},
    {"parents", T_OBJECT_EX, offsetof(Core, parents), READONLY, NULL},
    {"writes", T_OBJECT_EX, offsetof(Core, writes), READONLY, NULL},
    {"failure", T_OBJECT_EX, offsetof(Core, failure), 0, NULL},
    {"observer", T_OBJECT_EX, offsetof(Core, observer), 0, NULL},
    {"observed", T_OBJECT_EX, offsetof(Core, observed), 0, NULL},
    {"before_write", T_OBJECT_EX, offsetof(Core, before_write), 0, NULL},
    {"_kinds", T_OBJECT_EX, offsetof(Core, kinds), READONLY, NULL},
    {"seq", T_PYSSIZET, offsetof(Core, seq), 0, NULL},
    {"last_write", T_PYSSIZET, offsetof(Core, last_write), 0, NULL},
    {"dispatched", T_PYSSIZET, offsetof(Core, dispatched), 0, NULL},
    {"wrote_untagged", T_BOOL, offsetof(Core, wrote_untagged), 0, NULL},
    {"paused", T_BOOL, offsetof(Core, paused), 0, NULL},
    {NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "neural_flow_widget._native._tracer_core.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = core_new,
    .tp_init = core_init,
    .tp_traverse = (traverseproc)core_traverse,
    .tp_clear = (inquiry)core_clear,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_methods = core_methods,
    .tp_members = core_members,
    .tp_doc = "The compiled tracer core (see _tracer.py's _PythonCore, which it mirrors).",
};

/* --------------------------------------------------------------------------------- module */

static PyObject *setup(PyObject *module, PyObject *args) {
    PyObject *tensor, *size, *kind;
    if (!PyArg_ParseTuple(args, "O!O!O:setup", &PyType_Type, &tensor, &PyType_Type, &size, &kind))
        return NULL;
    Py_XSETREF(TensorType, Py_NewRef(tensor));
    Py_XSETREF(SizeType, Py_NewRef(size));
    Py_XSETREF(OpKind, Py_NewRef(kind));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"setup", setup, METH_VARARGS, "setup(torch.Tensor, torch.Size, op_kind)"},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_tracer_core",
    "The dataflow tracer's per-op work, compiled (see tracer.c).", -1, module_methods,
};

#define VERSION 1 /* of this interface: _tracer.py refuses another */

PyMODINIT_FUNC PyInit__tracer_core(void) {
    EntryType.tp_base = &_PyWeakref_RefType;
    if (PyType_Ready(&EntryType) < 0 || PyType_Ready(&TagTableType) < 0 ||
        PyType_Ready(&CoreType) < 0)
        return NULL;
    s_out = PyUnicode_InternFromString("out");
    s_inplace = PyUnicode_InternFromString("inplace");
    s_observe = PyUnicode_InternFromString("observe");
    s_untyped_storage = PyUnicode_InternFromString("untyped_storage");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    if (!s_out || !s_inplace || !s_observe || !s_untyped_storage || !s_data_ptr) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "TagTable", (PyObject *)&TagTableType) < 0 ||
        PyModule_AddObjectRef(module, "Core", (PyObject *)&CoreType) < 0 ||
        PyModule_AddIntConstant(module, "VERSION", VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
