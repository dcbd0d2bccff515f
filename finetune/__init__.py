"""LoRA fine-tuning of Qwen2-VL on this package's curated data (MMSci paper, Table 9), installed as
``scifig_finetune``: configs (:mod:`.config`), data converters to the SFT chat format (:mod:`.data`), assistant-only
loss masking (:mod:`.encode`), the training recipe (:mod:`.train`) and the ``scifig finetune`` commands (:mod:`.cli`).
"""
