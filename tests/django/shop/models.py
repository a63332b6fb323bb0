"""The sharded app of the Django tests: users and their orders, sharded by user id."""

from __future__ import annotations

from django.db import models


class User(models.Model):
    id = models.BigIntegerField(primary_key=True)
    name = models.TextField()
    n = models.BigIntegerField(default=0)

    class Meta:
        app_label = "shop"
        db_table = "shop_user"


class Order(models.Model):
    oid = models.BigIntegerField(primary_key=True)
    user = models.ForeignKey(User, on_delete=models.CASCADE, db_constraint=False)
    total = models.IntegerField(default=0)

    class Meta:
        app_label = "shop"
        db_table = "shop_order"
