# Alternative answers to exercise 06: the values filtered by op kind, the kept sets by slicing,
# and K chosen by sorting every K on the rule's keys (not a filtered minimum).
# %% q1_forward
def forward_values(outputs):
    loss = outputs[0]
    return [n for n in ml.topo_order([loss])
            if n is not loss and n.op is not ml.PLACEHOLDER and n.op is not ml.CONSTANT]
# %% q2_sweep
def sweep(outputs):
    values = forward_values(outputs)
    table = {}
    for k in range(len(values), 0, -1):
        new = ck.recompute_graph(outputs, set(values[k - 1::k]))
        table[k] = (ml.plan_offsets(new, order=ml.topo_order(new)).total_bytes,
                    len(ck.recomputed_nodes(new)))
    return dict(sorted(table.items()))
# %% q3_choose_k
def choose_k(outputs, budget=None):
    rows = [(k, planned, extra) for k, (planned, extra) in sweep(outputs).items()]
    if budget is None:
        rows.sort(key=lambda r: (r[1], r[2], r[0]))
        return rows[0][0]
    rows = sorted((r for r in rows if r[1] <= budget), key=lambda r: (r[2], r[1], r[0]))
    if not rows:
        raise ml.BudgetError(f"every K plans more than {budget} bytes")
    return rows[0][0]
