#!/usr/bin/env python3
"""The trainable parameter tensors of two real models, for tutti-fusion-bench: one tensor a line, in
the model's registration order (what `named_parameters()` yields; backward produces the gradients
roughly in the reverse of it, which is the order the bench enqueues them).

  python3 bench/fusion/shapes.py        writes bench/fusion/resnet50.tsv and bench/fusion/bert_base.tsv

The architectures are written out here from the models' source, not read from torch or transformers
(neither is installed for the bench), and the totals are asserted against the published parameter
counts, so a slip in the encoding fails loudly:
- ResNet-50: torchvision.models.resnet50() (torchvision/models/resnet.py, the "v1.5" Bottleneck that
  puts the stride on conv2, the 3x3, as torchvision does since 0.2): 25,557,032 parameters.
- BERT-base uncased: transformers.BertModel for bert-base-uncased (config: vocab 30522, hidden 768,
  12 layers, 12 heads, intermediate 3072, max positions 512, type vocab 2), pooler included:
  109,482,240 parameters (what BertModel.from_pretrained("bert-base-uncased") reports).
Shapes are PyTorch's: Conv2d weight out x in x kh x kw, Linear weight out x in, Embedding
num x dim, BatchNorm / LayerNorm weight and bias one dimension each."""
import textwrap
from math import prod
from pathlib import Path

HERE = Path(__file__).resolve().parent


def resnet50():
    """torchvision.models.resnet50(): [(name, shape)] in named_parameters() order."""
    out = []

    def conv(name, cout, cin, k):   # nn.Conv2d(..., bias=False) everywhere in ResNet
        out.append((f"{name}.weight", (cout, cin, k, k)))

    def bn(name, c):                # nn.BatchNorm2d: weight, bias (running stats are buffers)
        out.extend([(f"{name}.weight", (c,)), (f"{name}.bias", (c,))])

    conv("conv1", 64, 3, 7)
    bn("bn1", 64)
    inplanes, expansion = 64, 4
    for stage, (planes, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3)), start=1):
        for b in range(blocks):
            p = f"layer{stage}.{b}"
            conv(f"{p}.conv1", planes, inplanes, 1)            # 1x1 reduce
            bn(f"{p}.bn1", planes)
            conv(f"{p}.conv2", planes, planes, 3)              # 3x3, carries the stride (v1.5)
            bn(f"{p}.bn2", planes)
            conv(f"{p}.conv3", planes * expansion, planes, 1)  # 1x1 expand
            bn(f"{p}.bn3", planes * expansion)
            if b == 0:  # stride != 1 or inplanes != planes * 4: true for every stage's first block
                conv(f"{p}.downsample.0", planes * expansion, inplanes, 1)
                bn(f"{p}.downsample.1", planes * expansion)
            inplanes = planes * expansion
    out += [("fc.weight", (1000, 512 * expansion)), ("fc.bias", (1000,))]
    return out


def bert_base():
    """transformers.BertModel(bert-base-uncased config): [(name, shape)] in named_parameters() order."""
    vocab, hidden, layers, intermediate, positions, types = 30522, 768, 12, 3072, 512, 2
    out = []

    def linear(name, cout, cin):
        out.extend([(f"{name}.weight", (cout, cin)), (f"{name}.bias", (cout,))])

    def layer_norm(name):
        out.extend([(f"{name}.weight", (hidden,)), (f"{name}.bias", (hidden,))])

    out += [("embeddings.word_embeddings.weight", (vocab, hidden)),
            ("embeddings.position_embeddings.weight", (positions, hidden)),
            ("embeddings.token_type_embeddings.weight", (types, hidden))]
    layer_norm("embeddings.LayerNorm")
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for proj in ("query", "key", "value"):
            linear(f"{p}.attention.self.{proj}", hidden, hidden)
        linear(f"{p}.attention.output.dense", hidden, hidden)
        layer_norm(f"{p}.attention.output.LayerNorm")
        linear(f"{p}.intermediate.dense", intermediate, hidden)
        linear(f"{p}.output.dense", hidden, intermediate)
        layer_norm(f"{p}.output.LayerNorm")
    linear("pooler.dense", hidden, hidden)
    return out


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def write(path, params, source, expect_tensors, expect_elements):
    elements = [prod(s) for _, s in params]
    total = sum(elements)
    assert len(params) == expect_tensors, f"{path.name}: {len(params)} tensors, expected {expect_tensors}"
    assert total == expect_elements, f"{path.name}: {total:,} elements, expected {expect_elements:,}"
    assert len({n for n, _ in params}) == len(params), f"{path.name}: duplicate names"
    largest = max(range(len(params)), key=elements.__getitem__)
    small = sum(1 for e in elements if 4 * e < 64 << 10)
    sizes = sorted(elements)
    header = textwrap.wrap(f"{path.name}: the trainable parameter tensors of {source}, one a line in"
                           " named_parameters() order (the bench enqueues their gradients in reverse).",
                           98, initial_indent="# ", subsequent_indent="# ") + [
        "# Columns (tab-separated; every line starting '#' is a comment): name, shape (PyTorch's,",
        "# dimensions joined by 'x'), elements (float32 each).",
        "# Written by `python3 bench/fusion/shapes.py` from the architecture encoded there (torch",
        "# and transformers not needed); the totals are asserted against the published counts.",
        f"# tensors: {len(params)}",
        f"# elements: {total} ({total:,})",
        f"# float32 bytes: {4 * total} ({mib(4 * total)})",
        f"# largest: {params[largest][0]} {4 * elements[largest]} bytes ({mib(4 * elements[largest])});"
        f" median tensor {4 * sizes[len(sizes) // 2]} bytes; {small} of {len(params)} tensors under 64 KiB",
        "# name\tshape\telements",
    ]
    rows = [f"{n}\t{'x'.join(map(str, s))}\t{e}" for (n, s), e in zip(params, elements)]
    path.write_text("\n".join(header + rows) + "\n")
    print(f"{path}: {len(params)} tensors, {total:,} elements, {4 * total:,} float32 bytes")


def main():
    write(HERE / "resnet50.tsv", resnet50(),
          "torchvision.models.resnet50() (torchvision/models/resnet.py: Bottleneck v1.5 with the stride"
          " on conv2, layers [3, 4, 6, 3], expansion 4, downsample = 1x1 conv + BatchNorm on each"
          " stage's first block, convolutions without bias, fc 2048 -> 1000 with bias)",
          161, 25_557_032)
    write(HERE / "bert_base.tsv", bert_base(),
          "transformers.BertModel for bert-base-uncased (vocab 30522, hidden 768, 12 layers, 12 heads,"
          " intermediate 3072, max positions 512, type vocab 2; embeddings, encoder and pooler; no"
          " pre-training heads)",
          199, 109_482_240)


if __name__ == "__main__":
    main()
