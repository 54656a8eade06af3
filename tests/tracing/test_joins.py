"""Where data meets: the op graph names the ops that read tensors of two or more ops (a
residual's add, a U-Net's concatenation, a gate's multiply), which the front end draws as
junctions. Expected joins are read off each model's code."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import neural_flow_widget as nfw
from neural_flow_widget import wire


class Joins(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c, self.d = (nn.Linear(4, 4) for _ in range(4))
        self.e = nn.Linear(8, 4)

    def forward(self, x):
        h = self.a(x)
        r = h + self.b(h)  # add: a residual
        g = r * torch.sigmoid(self.c(r))  # mul: a gate
        cat = torch.cat([g, self.d(g)], dim=-1)  # cat: a skip by concatenation
        return self.e(cat) - x  # sub, with the input


def joined(flow: nfw.Flow) -> list[tuple[str, tuple[str, ...]]]:
    """(what the join does, the stages / inputs that own its parents), in op order."""
    owners, names = flow.condensed.owners, {c.index: c.id for c in flow.calls}
    input_of = {op: name for name, op in flow.condensed.input_ops}
    found = []
    for op, kind in flow.condensed.joins:
        parents = flow.condensed.parents[op]
        who = tuple(input_of.get(p) or names.get(owners[p], "body") for p in parents)
        found.append((kind, who))
    return found


def test_the_joins_of_a_model_name_what_meets_where():
    torch.manual_seed(0)
    flow = nfw.trace(Joins().eval(), torch.randn(2, 4))
    assert joined(flow) == [
        ("add", ("a", "b")),
        ("mul", ("body", "body")),  # r and sigmoid(c(r)): both ops of the model's body
        ("cat", ("body", "d")),
        ("sub", ("e", "input:0")),
    ]


def test_joins_travel_on_the_wire_as_kept_ops():
    torch.manual_seed(0)
    flow = nfw.trace(Joins().eval(), torch.randn(2, 4))
    message = wire.encode_graph(flow)
    kinds = [kind for _, kind in message["joins"]]
    assert kinds == ["add", "mul", "cat", "sub"]
    assert all(
        0 <= op < len(message["ops"]) and len(message["ops"][op][1]) >= 2
        for op, _ in message["joins"]
    )


def test_an_op_of_one_input_and_a_parameter_is_no_join():
    flow = nfw.trace(nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval(), torch.randn(1, 4))
    assert flow.condensed.joins == ()


def test_a_function_without_a_kind_is_named():
    class Where(nn.Module):
        def forward(self, x):
            return torch.where(x > 0, F.relu(x), x * 0.1)

    flow = nfw.trace(nn.Sequential(nn.Linear(3, 3), Where()).eval(), torch.randn(1, 3))
    assert [kind for _, kind in flow.condensed.joins] == ["where"]


class WrittenOut(nn.Module):
    """An attention written out as BERT's and T5's eager forward do it."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(8, 8) for _ in range(4))

    def forward(self, x, mask):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q @ k.transpose(-2, -1) / 8**0.5 + mask
        weights = F.dropout(F.softmax(scores, dim=-1), p=0.0)
        return self.o(weights.to(x.dtype) @ v)


class Fused(nn.Module):
    """The same through ``F.scaled_dot_product_attention``: q, k, v reshaped into heads in the
    module's own forward, so every parent of the attention op is an op of that forward."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):
        heads = lambda t: t.view(1, 5, 2, 4).transpose(1, 2)
        a = F.scaled_dot_product_attention(heads(self.q(x)), heads(self.k(x)), heads(self.v(x)))
        return self.o(a.transpose(1, 2).reshape(1, 5, 8))


def test_a_written_out_attention_is_named_so_and_a_fused_one_stays_in_the_graph():
    torch.manual_seed(0)
    flow = nfw.trace(WrittenOut().eval(), (torch.randn(1, 5, 8), torch.zeros(1, 5, 5)))
    # q kᵀ is a product, the mask added to it; the weights (a softmax of them) times v is the
    # attention, whose operands are an op of the forward and v
    assert joined(flow) == [
        ("matmul", ("q", "body")),
        ("add", ("body", "input:1")),
        ("attention", ("body", "v")),
    ]
    fused = nfw.trace(Fused().eval(), torch.randn(1, 5, 8))
    # its parents are all ops of the same forward (the heads' reshapes), yet it is kept: the
    # front end draws it where q, k and v meet
    assert joined(fused) == [("scaled_dot_product_attention", ("body", "body", "body"))]


def test_a_product_of_products_without_a_softmax_is_no_attention():
    class Chain(nn.Module):
        def forward(self, a, b, c):
            return (a @ b).relu() @ c

    flow = nfw.trace(Chain(), (torch.randn(3, 3), torch.randn(3, 3), torch.randn(3, 3)))
    assert [kind for _, kind in flow.condensed.joins] == ["matmul", "matmul"]


def test_an_attention_whose_dropout_is_a_module_is_named_so():
    """GPT-2's eager attention: ``attn_weights = module.attn_dropout(softmax(...))`` runs the
    weights through an ``nn.Dropout`` call of its own before ``attn_weights @ value``."""

    class ModuleDropout(WrittenOut):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(0.0)

        def forward(self, x, mask):
            q, k, v = self.q(x), self.k(x), self.v(x)
            weights = self.drop(F.softmax(q @ k.transpose(-2, -1) / 8**0.5 + mask, dim=-1))
            return self.o(weights @ v)

    torch.manual_seed(0)
    flow = nfw.trace(ModuleDropout().eval(), (torch.randn(1, 5, 8), torch.zeros(1, 5, 5)))
    assert joined(flow)[-1] == ("attention", ("drop", "v"))


def test_gpt2_eager_attention_is_named_so_in_every_layer():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=16)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    flow = nfw.trace(model, torch.randint(0, 64, (1, 6)))
    kinds = [kind for kind, _ in joined(flow)]
    assert kinds.count("attention") == 2, kinds


class Tokens(nn.Module):
    """A vision transformer's embedding, written as ViT's: patches projected, a learned [CLS]
    token put before them, a learned position embedding added; and a learned scale that
    multiplies (no named operand: only adds and concatenations name theirs)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, 8, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, 8))
        self.pos = nn.Parameter(torch.randn(1, 5, 8))
        self.gamma = nn.Parameter(torch.ones(8))
        self.register_buffer("shift", torch.zeros(8))

    def forward(self, x):
        patches = self.proj(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1).to(x.dtype), patches], dim=1)
        return (tokens + self.pos) * self.gamma - self.shift


class Tokenized(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.norm = Tokens(), nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.embed(x))


def named_operands(flow: nfw.Flow) -> list[tuple[str, str, str]]:
    """(what the join does, the parameter it reads, the call that ran it), in op order."""
    graph, ids = flow.condensed, {c.index: c.id for c in flow.calls}
    kinds, name_of = dict(graph.joins), dict(graph.operands)
    return [
        (kinds[op], name_of[p], ids.get(graph.owners[op], "body"))
        for op in sorted(kinds)
        for p in graph.parents[op]
        if p in name_of
    ]


def test_a_parameter_added_or_concatenated_is_a_named_operand_of_its_join():
    torch.manual_seed(0)
    model, x = Tokenized().eval(), torch.randn(2, 3, 8, 8)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    expected = model(x)
    flow = nfw.trace(model, x)
    # from Tokens.forward: cat(cls, patches), + pos, - shift (a buffer); not * gamma
    assert named_operands(flow) == [
        ("cat", "embed.cls", "embed"),
        ("add", "embed.pos", "embed"),
        ("sub", "embed.shift", "embed"),
    ]
    assert torch.equal(model(x), expected)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    message = wire.encode_graph(flow)
    assert [tuple(o) for o in message["operands"]] == list(flow.condensed.operands)
    assert all(
        0 <= op < len(message["ops"]) and message["ops"][op][1] == []
        for op, _ in message["operands"]
    )


def test_vit_joins_its_cls_token_and_position_embedding_in_its_embeddings_forward():
    from fixture_models import vit

    flow = nfw.trace(*vit())
    # ViTEmbeddings.forward: cat((cls_token.expand(...), embeddings)); + position_embeddings
    assert named_operands(flow) == [
        ("cat", "embeddings.cls_token", "embeddings"),
        ("add", "embeddings.position_embeddings", "embeddings"),
    ]


class MaskedTokens(nn.Module):
    """ViT-MAE's embedding as it writes it: positions added to the patches, then its [CLS]
    token, itself a sum of two parameters (``cls + pos[:, :1]``), concatenated before them."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, 8, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, 8))
        self.pos = nn.Parameter(torch.randn(1, 5, 8))
        self.register_buffer("freq", torch.arange(8.0))

    def forward(self, x):
        patches = self.proj(x).flatten(2).transpose(1, 2) + self.pos[:, 1:, :]
        first = (self.cls + self.pos[:, :1, :]).expand(x.shape[0], -1, -1)
        # a buffer's reshape read by a product with data: no name of its own to draw
        return torch.cat([first, patches], dim=1) * self.freq.view(1, 1, -1).sqrt()


def test_a_token_made_of_parameters_alone_is_named_after_them_where_it_is_joined_in():
    torch.manual_seed(0)
    model, x = MaskedTokens().eval(), torch.randn(2, 3, 8, 8)
    expected = model(x)
    flow = nfw.trace(nn.Sequential(model).eval(), x)
    assert named_operands(flow) == [
        ("add", "0.pos", "0"),  # the patches' positions
        ("add", "0.pos", "0"),  # the [CLS] token's own sum: its two parameters (the slice
        ("add", "0.cls", "0"),  # read first, the parameter read as it is after it) ...
        ("cat", "0.cls + 0.pos", "0"),  # ... then, as one, concatenated, named in code order
    ]
    assert torch.equal(model(x), expected)
