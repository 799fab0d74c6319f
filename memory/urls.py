from django.urls import include, path

from memory.views import home

urlpatterns = [
    path("", home.home, name="home"),
    path("", include("memory.urlconfs.dashboard")),
    path("promotions/", include("memory.urlconfs.promotions")),
    path("compactions/", include("memory.urlconfs.compaction")),
    path("refinement/", include("memory.urlconfs.refinement")),
    path("llm/", include("memory.urlconfs.llm")),
    path("pipeline/", include("memory.urlconfs.pipeline")),
]
