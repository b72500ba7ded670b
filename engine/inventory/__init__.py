"""The global inventory every instance keeps: clusters, sets, bindings, scores, deployers, taints."""

from engine.inventory.store import Inventory, InventoryChange, ObjectKey

__all__ = ["Inventory", "InventoryChange", "ObjectKey"]
