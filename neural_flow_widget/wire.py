"""The wire format: what travels from the kernel to the front end.

This module is the only place where Python names become wire names. It is mirrored once in
TypeScript (``js/src/wire.ts``); the golden fixture ``tests/fixtures/wire_unet.json`` is read by
both pytest and the JS tests. Bump ``SCHEMA`` on any change to a field.

Two messages exist.

1. The **graph** (traitlet ``graph``, plain JSON, no images), from :func:`encode_graph`::

    {
      "schema": 1,
      "model": "UNet",                 # class name of the traced model
      "topology": "dataflow",          # "dataflow" | "fx" | "sequential": what made the edges
      "inputs": ["input:0"],           # model input node ids, in argument order
      "outputs": ["output:0"],         # model output node ids, in output order
      "calls": [                       # every module call of the run, in start order;
        {                              #   a call's index in this list is its "call index"
          "id": "enc1",                # stage id: qualified name, or "name#k" for a reused module
          "module": "enc1",            # qualified module name
          "type": "ConvBlock",         # class name (text, never HTML)
          "call": 0,                   # k: which call of this module (0-based)
          "parent": -1,                # call index of the enclosing call; -1 = the model itself
          "depth": 1,                  # module-tree depth (1 = a child of the model)
          "leaf": false,               # the module has no children
          "params": 1234,              # parameters of the module (recursive)
          "shapes": [[1, 16, 64, 64]], # output tensor shapes (one per tensor leaf)
          "dtypes": ["float32"],       # output tensor dtypes, torch names without "torch."
          "sig": "3f2a9c1e",           # structure signature: equal for blocks of equal structure
          "error": null,               # why the call failed (or its summary failed), else null
          "in": [4, 7]                 # op ids (below) that produced this call's input tensors
        }
      ],
      "ops": [[-1, []], [0, [0]]],     # the condensed op graph: [owner call index, parent op ids];
                                       #   owner -1 = the model's own forward body
      "input_ops": [["input:0", 0]],   # which op is each model input
      "output_ops": [["output:0", [9]]],  # which ops produced each model output
      "selected": [0, 1, 2],           # call indices of the stages trace() selected
      "attention": [3],                # call indices that recorded attention maps
      "stats": [[0.1, 0.5]]            # per call: [mean |x|, std] of its first output, or null
    }

   Stage edges for any selection (a set of call indices) follow from ``calls``, ``ops``,
   ``input_ops`` and ``output_ops`` by the walk of ``_topology.stage_edges``; the front end
   re-implements exactly that walk so that expanding or collapsing a group needs no kernel
   round trip.

2. A **stage reply** to the ``_stage_data`` command, from :func:`encode_stage_reply`: a JSON
   message plus a list of binary buffers (never base64)::

    request:  {"stage": "enc1", "view": "grid" | null, "channel": int | null,
               "head": int | null, "sample": int}
    reply:    {"ok": true, "stage": "enc1",
               "summaries": [                     # one per tensor leaf of the output
                 {"leaf": "0", "shape": [...], "dtype": "float32", "device": "cpu",
                  "kind": "float" | "int" | "bool",
                  "stats": {"min": .., "max": .., "mean": .., "std": .., "mean_abs": ..,
                            "zero_fraction": .., "nan": int, "posinf": int, "neginf": int},
                  "sampled": int | null,          # elements used when sampled, else null
                  "hist": {"lo": .., "hi": .., "bins": 64, "buffer": 0},  # int64 counts
                  "values": [[value, count], ...] | null,   # int / bool tensors
                  "error": null}
               ],
               "views": ["grid", "top", "channel", "mean"],  # kinds this stage offers
               "view": {"kind": "grid", "shape": [16, 32, 32],  # uint8 buffer layout
                        "vmin": -1.2, "vmax": 1.2, "signed": true,
                        "axes": ["y", "x"], "labels": ["ch 3", ...] | null,
                        "channels": [3, 7, ...] | null, "buffer": 1} | null,
               "attention": [{"heads": 4, "q_len": 16, "k_len": 16,
                              "pool": [1, 1],   # query / key block size; 1 = exact
                              "tokens": ["12", ...] | null, "buffer": 2}],  # float32
               "error": null}
    error:    {"ok": false, "stage": "enc1", "error": "unknown view kind 'foo' for ..."}
"""
