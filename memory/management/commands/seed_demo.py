from django.core.management.base import BaseCommand

from memory.demo.seed import seed_demo


class Command(BaseCommand):
    help = "Load demo personas, projects and lessons. Safe to run again: existing demo data is left as is."

    def handle(self, *args, **options):
        seed_demo(self.stdout)
