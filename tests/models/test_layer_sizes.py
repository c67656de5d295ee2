"""layer_sizes / layer_inputs (lesson 09's per-layer sizes) against VGG-16's published layout."""
import pytest

from memlab import models
from memlab.checkpoint import parallel as par
from memlab.errors import MemlabError


def test_vgg16_has_16_weighted_layers_and_its_published_parameters():
    params, acts = models.layer_sizes(models.vgg(batch=1))
    assert len(params) == 16                      # 13 convolutions and 3 fully connected layers
    assert sum(params) == 138_344_128             # Simonyan & Zisserman's 138M, without biases
    assert params[-3] == 25088 * 4096


def test_layer_inputs_are_the_previous_layers_outputs():
    ins = models.layer_inputs(models.vgg(batch=1))
    assert ins[0] == 3 * 224 * 224 * 4            # the image
    assert ins[1] == 64 * 224 * 224 * 4           # conv1_1's output
    assert ins[-3] == 512 * 14 * 14 * 4           # conv5_3's output, before its relu and pool
    assert ins[-1] == 4096 * 4                    # fc7's output


def test_from_sizes_keeps_measured_inputs_for_remat():
    m = par.from_sizes([10, 10], [100.0, 100.0], [3.0, 7.0])
    assert m.boundary == [3.0, 7.0]
    assert par.pipeline_memory(m, 2, 2, 4, remat=True)[1] == 16 * 10 + 7 * 2 * 2 + 100 * 2
    with pytest.raises(MemlabError, match="inputs"):
        par.from_sizes([1, 2], [1.0, 2.0], [1.0])
