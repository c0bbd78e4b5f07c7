"""The tree of issue 39's table as a CSV for `prodops deliverable import`, shared by the benches
that import it (server-memory.sh, tree-import-shapes.sh): `orders` orders of `phases` phases of
`stages` stages each, and a 64-level chain of phases under an order of its own; ids from `rng`
(so a seed gives the same file), rows shuffled unless asked for in tree order."""
import uuid


def write_tree(path, rng, orders, phases=10, stages=1000, shuffle=True, tag="", width=4):
    rows = []

    def node(kind, parent, label):
        nid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        rows.append(f"{nid},{tag}{label},{kind.capitalize()} {label},{kind},{parent}")
        return nid

    for o in range(orders):
        order = node("order", "", f"O{o:02d}")
        for p in range(phases):
            phase = node("phase", order, f"O{o:02d}.P{p}")
            for s in range(stages):
                node("stage", phase, f"O{o:02d}.P{p}.S{s:0{width}d}")
    parent = node("order", "", "CHAIN")
    for depth in range(63):
        parent = node("phase", parent, f"CHAIN.{depth:02d}")
    if shuffle:
        rng.shuffle(rows)
    with open(path, "w") as out:
        out.write("id,identifier,name,type,parentId\n")
        out.write("\n".join(rows) + "\n")
    return len(rows)
