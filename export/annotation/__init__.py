"""A labelling round, step by step: ``python -m export.annotation {candidates,select,batch,merge,agreement,pool}``.

``candidates`` finds keyword mentions in texts (stand-off), ``select`` chooses which of them
annotators read, ``batch`` writes one file per annotator with the text, ``merge`` checks their
answers and writes a label file of ``export/labels/``, ``agreement`` scores two label sets against
each other, ``pool`` splits unlabelled mentions into a distillation pool and unseen text.
``export/annotation/README.md`` runs a round end to end and maps the old numbered round scripts
onto these commands.
"""
