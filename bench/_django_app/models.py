"""The model of bench/_django_overhead.py."""

from __future__ import annotations

from django.db import models


class Account(models.Model):
    id = models.BigIntegerField(primary_key=True)
    name = models.TextField()
    n = models.BigIntegerField(default=0)

    class Meta:
        app_label = "benchapp"
        db_table = "accounts"
