"""Keras import rules for ``Dropout`` (with its ``noise_shape``), ``SpatialDropout1D/2D/3D`` and the random
augmentation layers (``RandomFlip``, ``MixUp``, ...: the input itself at inference, recorded as dropped).

Example: ``SpatialDropout2D(0.2)`` on (N, H, W, C) -> ``dropout {rate=0.2, axes=(1, 2)}``.
"""
from __future__ import annotations

from ...ir import imports
from ..dropout import DROPOUT

__all__ = ["AUGMENTATIONS"]


@DROPOUT.imports("keras", "Dropout")
def _dropout_from_keras(call):
    """``Dropout(rate, noise_shape)``: a noise_shape of 1 on an axis shares the mask along it, an axis of size 1
    too (EfficientNet's ``noise_shape=(None, 1, 1, 1)`` at a 1x1 map reads so, as at any other size: its blocks
    stay alike)."""
    x = call.inputs[0]
    shape = call.config.get("noise_shape")
    if shape is not None and len(shape) != x.type.rank:
        call.unsupported(f"noise_shape {tuple(shape)} for a rank-{x.type.rank} input")
    axes = tuple(i for i, d in enumerate(shape or ()) if d == 1)
    return call.emit(DROPOUT, [x], {"rate": float(call.config["rate"]), "axes": axes})


@imports("keras", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D")
def _spatial_dropout_from_keras(call):
    """One mask value per sample and channel: shared along the spatial axes."""
    x = call.inputs[0]
    channels_last = call.config.get("data_format", "channels_last") != "channels_first"
    spatial = range(1, x.type.rank - 1) if channels_last else range(2, x.type.rank)
    return call.emit(DROPOUT, [x], {"rate": float(call.config["rate"]), "axes": tuple(spatial)})


#: Keras' random augmentation layers that pass their input through at inference (RandomCrop crops: traced)
AUGMENTATIONS = ("AugMix", "CutMix", "MixUp", "RandAugment", "RandomBrightness", "RandomColorDegeneration",
                 "RandomColorJitter", "RandomContrast", "RandomElasticTransform", "RandomErasing", "RandomFlip",
                 "RandomGaussianBlur", "RandomGrayscale", "RandomHue", "RandomInvert", "RandomPerspective",
                 "RandomPosterization", "RandomRotation", "RandomSaturation", "RandomSharpness", "RandomShear",
                 "RandomTranslation", "RandomZoom")


@imports("keras", *AUGMENTATIONS)
def _augmentation_from_keras(call):
    """A random augmentation: the identity at inference (its seed state is not a weight to convert)."""
    call.dropped(call.inputs[0], type(call.layer).__name__)
    return call.inputs[0]
