"""Models: the graphs the lessons plan and run, and the lecture's comparisons as data.

:mod:`.zoo` holds graphs that run with numpy (the p.22 and p.23 examples, MLPs of any depth, p.28);
:mod:`.shape_only` the big networks a planner needs only shapes for (AlexNet-, VGG-, GoogLeNet-like
networks, ResNets, unrolled LSTMs; p.29, p.35-36); :mod:`.studies` the slides' tables and curves
(p.29, p.35-36); :mod:`.encoder_decoder` the sequence-to-sequence model of OpenNMT's notes (seed
001), and :mod:`.opennmt` its memory against target length; :mod:`.onnx_import` real networks from ONNX files
(:func:`from_onnx`, the nine of :func:`onnx_zoo`), :mod:`.densenets` DenseNet's memory (Pleiss et al. 2017); :mod:`.gpt` a decoder-only
transformer (GPT-2; lesson 15) and :mod:`.activations` its activation memory. Imports the graph, memory and
execute layers.
"""
from . import zoo, shape_only, studies, encoder_decoder, opennmt, gpt, activations
from .gpt import Transformer, transformer, gpt2, gpt_7b
from .encoder_decoder import Seq2Seq, seq2seq
from .zoo import slide22, slide23, slide24, mlp, mlp2, training_outputs, conv_resnet
from .onnx_import import from_onnx, onnx_zoo, load_onnx
from . import densenets, conv_workspace, pytorch_saves
from .densenets import densenet, pleiss_variants
from .shape_only import (ShapeOnly, shape_op, alexnet, vgg, googlenet, resnet, resnet_cifar, lstm,
                         mlp2_fused)
from .studies import (GB, SLIDE29, SLIDE35, SLIDE36, STRATEGIES, SUBLINEAR, CHEN_RESNET_1000, CHEN_LSTM,
                      compare_strategies, slide29_table, slide29_onnx_table, SLIDE29_ONNX, resnet_curve, lstm_curve, overhead,
                      layer_sizes, layer_inputs, every_k_curve, CHECKPOINTS, CHEN_FIGURES, training_steps, feature_map_bytes,
                      checkpoint_table, runtime_memory, runnable_step, overhead_curve,
                      SLIDE35_TOTAL, SLIDE36_TOTAL, SLIDE37, SLIDE35_DROP)

__all__ = ["from_onnx", "onnx_zoo", "load_onnx", "densenets", "conv_workspace", "pytorch_saves", "densenet",
           "pleiss_variants", "zoo", "shape_only", "studies", "encoder_decoder", "opennmt", "Seq2Seq", "seq2seq",
           "gpt", "activations", "Transformer", "transformer", "gpt2", "gpt_7b",
           "slide22", "slide23", "slide24", "mlp", "mlp2", "training_outputs",
           "conv_resnet",
           "ShapeOnly", "shape_op", "mlp2_fused", "alexnet", "vgg", "googlenet", "resnet",
           "resnet_cifar", "lstm", "GB", "SLIDE29",
           "SLIDE35", "SLIDE36", "STRATEGIES", "compare_strategies", "slide29_table", "slide29_onnx_table", "SLIDE29_ONNX",
           "resnet_curve", "lstm_curve", "SUBLINEAR", "CHEN_RESNET_1000", "CHEN_LSTM", "overhead",
           "layer_sizes", "layer_inputs", "every_k_curve", "CHECKPOINTS", "CHEN_FIGURES", "training_steps", "feature_map_bytes", "checkpoint_table",
           "runtime_memory", "runnable_step", "overhead_curve", "SLIDE35_TOTAL", "SLIDE36_TOTAL", "SLIDE35_DROP",
           "SLIDE37"]
