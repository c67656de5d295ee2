# Alternative answers to exercise 16: initializers made with helper.make_tensor and tensors named
# after their layer, parameters counted layer by layer as weights then biases, and the kept set
# chosen by sorting every K-th choice (and keeping everything) on the rule's keys.
# %% q1_build_mlp
def build_mlp(widths, batch):
    nodes, inits, prev = [], [], "x"
    last = len(widths) - 2
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        inits.append(helper.make_tensor(f"W{i}", TensorProto.FLOAT, [a, b], [0.0] * (a * b)))
        inits.append(helper.make_tensor(f"b{i}", TensorProto.FLOAT, [b], [0.0] * b))
        name = "y" if i == last else f"layer{i}_linear"
        nodes.append(helper.make_node("Gemm", [prev, f"W{i}", f"b{i}"], [name], name=f"gemm{i}"))
        prev = name
        if i != last:
            nodes.append(helper.make_node("Relu", [name], [f"layer{i}_relu"], name=f"relu{i}"))
            prev = f"layer{i}_relu"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, widths[0]])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, widths[-1]])
    return helper.make_model(helper.make_graph(nodes, "my_mlp", [x], [y], inits))
# %% q2_count
def count_by_hand(widths, batch):
    params = acts = 0
    for i in range(len(widths) - 1):
        params += widths[i] * widths[i + 1]
        params += widths[i + 1]
        acts += batch * widths[i + 1] * 4                 # the Gemm's output
        if i < len(widths) - 2:
            acts += batch * widths[i + 1] * 4             # the Relu's
    return params, acts
# %% q3_checkpoints
def checkpoints_within(widths, batch, budget):
    m = ml.models.from_onnx(build_mlp(widths, batch))
    step = ml.models.training_outputs(m)
    values = [n for n in ml.topo_order(m["loss"]) if n.op.computes and n is not m["loss"]]
    choices = []
    for k in range(len(values), 0, -1):
        keep = values[k - 1::k]
        new = ck.recompute_graph(step, set(keep))
        planned = ml.plan_offsets(new, order=ml.topo_order(new)).total_bytes
        if planned <= budget:
            choices.append((len(ck.recomputed_nodes(new)), planned, [n.name for n in keep]))
    if not choices:
        raise ml.BudgetError(f"nothing fits {budget} bytes")
    return set(sorted(choices)[0][2])
