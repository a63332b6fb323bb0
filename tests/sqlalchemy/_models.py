"""The ORM models of the SQLAlchemy tests: the tables of tests/migrate/_harness.py."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(Text)
    n: Mapped[int] = mapped_column(BigInteger)


class Event(Base):
    __tablename__ = "events"
    eid: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("users.id"))
    payload: Mapped[str | None] = mapped_column(Text)
    user: Mapped[User] = relationship(User)
