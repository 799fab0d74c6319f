"""Memory, lessons, their references and the change history every mutation writes."""

import hashlib
import re
import unicodedata

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory.access import APPROVE, CURATE, permission_codename
from memory.lessons.paths import memory_path


class Tier(models.TextChoices):
    CORE = "core", "Core"
    WORKING = "working", "Working"


class Category(models.TextChoices):
    PATTERN = "PATTERN", "Pattern"
    DECISION = "DECISION", "Decision"
    ARCHITECTURE = "ARCHITECTURE", "Architecture"
    OBSERVATION = "OBSERVATION", "Observation"
    HYPOTHESIS = "HYPOTHESIS", "Hypothesis"
    TODO = "TODO", "To do"


CORE_CATEGORIES = ("PATTERN", "DECISION", "ARCHITECTURE")
ALL_CATEGORIES = tuple(Category.values)


class Relevance(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"
    CRITICAL = "critical", "Critical"

    @classmethod
    def rank(cls, value):
        """Position in the order low < medium < high < critical (an unknown value counts as medium)."""
        order = cls.values
        return order.index(value) if value in order else order.index(cls.MEDIUM)

    @classmethod
    def highest(cls, values, default=None):
        """The highest relevance among values (default medium when there are none)."""
        return max(values, key=cls.rank, default=default or cls.MEDIUM)


class LessonStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    PROMOTED = "promoted", "Promoted"
    SUPERSEDED = "superseded", "Superseded"
    DELETED = "deleted", "Deleted"


_LINES_SUFFIX = re.compile(r"#L(?P<start>\d+)(?:-L?(?P<end>\d+))?$")


def normalize_text(text):
    """The form two lessons must share to count as the same words (case, spacing, trailing dot)."""
    text = unicodedata.normalize("NFKC", text or "")
    # split() breaks at exactly the characters `\s` matches and drops them at both ends: the same
    # result as substituting runs of `\s+` with one space and stripping, at a fraction of the cost.
    return " ".join(text.split()).rstrip(".").casefold()


def content_hash(text):
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


class Memory(models.Model):
    """One persona's memory of one project."""

    persona = models.ForeignKey("personas.Persona", on_delete=models.CASCADE, related_name="memories")
    project = models.ForeignKey("personas.Project", on_delete=models.CASCADE, related_name="memories")
    core_char_budget = models.PositiveIntegerField(default=4000)
    working_char_budget = models.PositiveIntegerField(default=8000)
    max_working_lines = models.PositiveIntegerField(default=150)
    compaction_target_lines = models.PositiveIntegerField(default=60)
    promotion_threshold = models.PositiveIntegerField(default=3)
    reflections_to_core = models.BooleanField(
        default=False, help_text="Let pipeline reflections go straight to core instead of the promotion inbox."
    )
    version = models.PositiveBigIntegerField(default=0, help_text="Bumped by every mutation of this memory's lessons.")
    # Active lessons per tier, counted again by every write that bumps `version` (services.memory_bump_version),
    # so list pages of thousands of memories read two numbers a memory instead of counting lessons.
    active_core_lessons = models.PositiveIntegerField(default=0, editable=False)
    active_working_lessons = models.PositiveIntegerField(default=0, editable=False)
    last_reflected_at = models.DateTimeField(null=True, blank=True)
    last_compacted_at = models.DateTimeField(null=True, blank=True)
    last_refined_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "memories"
        ordering = ["persona__name", "project__name"]
        # The actions of memory.access beyond view (which Django adds): what the roles grant.
        permissions = [
            (permission_codename(CURATE), "Can edit, protect, delete, restore and revert lessons"),
            (permission_codename(APPROVE), "Can approve promotions, apply compactions and edit refinement prompts"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["persona", "project"], name="memory_unique_persona_project"),
        ]

    def __str__(self):
        return f"{self.persona} × {self.project}"

    def get_absolute_url(self):
        return memory_path(self)

    def history_url(self):
        return memory_path(self, "history")

    def prompt_url(self):
        return memory_path(self, "prompt")


class LessonQuerySet(models.QuerySet):
    def active(self):
        return self.filter(status=LessonStatus.ACTIVE)

    def core(self):
        return self.filter(tier=Tier.CORE)

    def working(self):
        return self.filter(tier=Tier.WORKING)

    def touching_path(self, path):
        """Lessons with a ref at `path`, or under it when `path` is a folder (ends with '/').

        A path with lines (`src/app.py#L20`, `src/app.py#L20-L30`) matches the refs to that file whose
        range covers any of those lines, and refs to the whole file.
        """
        path = path.strip()
        lines = _LINES_SUFFIX.search(path)
        if lines:
            path = path[: lines.start()].lstrip("./")
            first = int(lines["start"])
            last = max(first, int(lines["end"] or first))
            covers = (
                models.Q(refs__start_line__isnull=True)
                | models.Q(refs__start_line__lte=last, refs__end_line__gte=first)
                | models.Q(refs__start_line__lte=last, refs__start_line__gte=first, refs__end_line__isnull=True)
            )
            # One filter() call, so the path and the lines are checked on the same ref.
            return self.filter(models.Q(refs__path=path) & covers).distinct()
        path = path.lstrip("./")
        if path.endswith("/"):
            return self.filter(refs__path__startswith=path).distinct()
        return self.filter(models.Q(refs__path=path) | models.Q(refs__path__startswith=path + "/")).distinct()


class Lesson(models.Model):
    # Every index is paid for on each of the 100,000 inserts of a team's import, so the table has no
    # index a query cannot use: content_hash is read through lesson_memory_hash (memory first), and
    # the mostly-empty links are indexed only where they are set. memory keeps its own index: it
    # hands a memory's lessons back in id order, which compile and export read without a sort.
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="lessons")
    tier = models.CharField(max_length=10, choices=Tier.choices, default=Tier.WORKING)
    # Blank category: an untagged v1 bullet, or an unparsed line kept verbatim.
    category = models.CharField(max_length=20, choices=Category.choices, blank=True)
    text = models.TextField()
    relevance = models.CharField(max_length=10, choices=Relevance.choices, default=Relevance.MEDIUM)
    protected = models.BooleanField(default=False)
    status = models.CharField(max_length=12, choices=LessonStatus.choices, default=LessonStatus.ACTIVE)
    lesson_date = models.DateField(default=timezone.localdate)
    # Lessons appended together (one reflection, one dated section of working.md) share a section.
    section = models.PositiveIntegerField(default=0)
    # A line the file importer could not parse is kept verbatim here and written back unchanged.
    unparsed = models.BooleanField(default=False)
    raw_line = models.TextField(blank=True)
    # Imported without a date (a headerless working.md, a core line without "(promoted …)"): lesson_date
    # holds the import day for ordering, and files keep the lesson undated.
    undated = models.BooleanField(default=False)
    # The `## YYYY-MM-DD [TAG]` line of the imported section, written back as read (Night Watch's own
    # promotion can leave a header whose tag no longer matches the first bullet). Blank: derived.
    section_heading = models.CharField(max_length=100, blank=True)
    vague = models.BooleanField(default=False, help_text="Flagged by reflection parsing: no file, symbol or number.")
    content_hash = models.CharField(max_length=64)

    # Provenance
    interaction = models.ForeignKey(
        "memory.Interaction",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="lessons",
        db_index=False,
    )
    derived_from = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="derivatives",
        help_text="Lessons this one was promoted, merged or reflected from.",
    )
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="supersedes",
        db_index=False,
    )
    source_entry_ids = models.JSONField(default=list, blank=True)
    observed_at = models.DateTimeField(null=True, blank=True)
    # A lesson that only holds for a while: from expires_on on it is compiled and exported no more;
    # expires_when names the event it holds until, for a reviewer to act on.
    expires_on = models.DateField(null=True, blank=True)
    expires_when = models.TextField(blank=True)

    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = LessonQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["memory", "status", "tier"], name="lesson_memory_status_tier"),
            models.Index(fields=["memory", "content_hash"], name="lesson_memory_hash"),
            models.Index(
                fields=["interaction"], name="lesson_interaction", condition=models.Q(interaction__isnull=False)
            ),
            models.Index(
                fields=["superseded_by"], name="lesson_superseded_by", condition=models.Q(superseded_by__isnull=False)
            ),
            # Compiling reads the must-keep lessons of a memory on every agent turn.
            models.Index(
                fields=["memory", "status"],
                name="lesson_must_keep",
                condition=models.Q(protected=True) | models.Q(relevance="critical"),
            ),
            # The review queue counts the live lessons past their day on every page; few lessons have one.
            models.Index(
                fields=["expires_on"],
                name="lesson_expires_on",
                condition=models.Q(expires_on__isnull=False, status="active"),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(category__in=["", *ALL_CATEGORIES]), name="lesson_category_valid"
            ),
            models.CheckConstraint(condition=models.Q(tier__in=["core", "working"]), name="lesson_tier_valid"),
            models.CheckConstraint(
                condition=models.Q(tier="working") | models.Q(category__in=CORE_CATEGORIES) | models.Q(unparsed=True),
                name="lesson_core_category",
            ),
            models.CheckConstraint(
                condition=models.Q(relevance__in=["low", "medium", "high", "critical"]), name="lesson_relevance_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=["active", "promoted", "superseded", "deleted"]),
                name="lesson_status_valid",
            ),
        ]

    def __str__(self):
        return f"[{self.category or '-'}] {self.text[:60]}"

    def save(self, *args, **kwargs):
        self.content_hash = content_hash(self.text)
        super().save(*args, **kwargs)

    @property
    def is_expired(self):
        """A live lesson past its day: no longer compiled, and waiting for a person to restore or retire it."""
        return (
            self.status == LessonStatus.ACTIVE
            and self.expires_on is not None
            and self.expires_on <= timezone.localdate()
        )

    @property
    def is_must_keep(self):
        """Protected and critical lessons are never the ones a budget cuts."""
        return self.protected or self.relevance == Relevance.CRITICAL


class LessonRef(models.Model):
    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="refs")
    path = models.CharField(max_length=500, db_index=True)
    start_line = models.PositiveIntegerField(null=True, blank=True)
    end_line = models.PositiveIntegerField(null=True, blank=True)
    position = models.PositiveSmallIntegerField(default=0)
    # Where the ref was last seen true in the repository (memory.refs); rows are replaced on
    # every write, the anchor outlives them.
    anchor = models.ForeignKey(
        "memory.RefAnchor", null=True, blank=True, on_delete=models.SET_NULL, related_name="refs", db_index=False
    )

    class Meta:
        ordering = ["lesson_id", "position", "id"]
        indexes = [models.Index(fields=["anchor"], name="ref_anchor", condition=models.Q(anchor__isnull=False))]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(end_line__isnull=True)
                | (models.Q(start_line__isnull=False) & models.Q(end_line__gte=models.F("start_line"))),
                name="ref_line_range_valid",
            ),
        ]

    def __str__(self):
        return self.as_text()

    def as_text(self):
        if self.start_line is None:
            return self.path
        if self.end_line is None or self.end_line == self.start_line:
            return f"{self.path}#L{self.start_line}"
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


class LessonConfirmation(models.Model):
    """The same lesson seen again: counted towards promotion instead of stored twice."""

    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="confirmations")
    confirmed_on = models.DateField(default=timezone.localdate)
    interaction = models.ForeignKey("memory.Interaction", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["confirmed_on", "id"]

    def __str__(self):
        return f"Lesson #{self.lesson_id} seen again on {self.confirmed_on}"


class ActorType(models.TextChoices):
    USER = "user", "User"
    AGENT = "agent", "Agent"
    JOB = "job", "Job"
    SYSTEM = "system", "System"


class ChangeBatch(models.Model):
    """Everything one action did (an import, a reflection, a job run, an approval): revertible as one unit."""

    class Kind(models.TextChoices):
        MANUAL = "manual", "Manual edit"
        IMPORT = "import", "Import"
        REFLECTION = "reflection", "Reflection"
        AGENT = "agent", "Agent write"
        PROMOTION = "promotion", "Promotion"
        COMPACTION = "compaction", "Compaction"
        REFINEMENT = "refinement", "Refinement"
        PIPELINE = "pipeline", "Observation pipeline"
        REVERT = "revert", "Revert"
        SYNC = "sync", "Night Watch files"

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="batches")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    label = models.CharField(max_length=300, blank=True)
    reason = models.TextField(blank=True)
    actor_type = models.CharField(max_length=10, choices=ActorType.choices)
    actor_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    actor_label = models.CharField(max_length=200, blank=True, help_text="Agent token name or job run.")
    created_at = models.DateTimeField(default=timezone.now)
    reverted_by = models.OneToOneField("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reverts")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "change batches"
        # A memory's history, newest first, a page at a time: read in index order, not sorted.
        indexes = [models.Index(fields=["memory", "-created_at", "-id"], name="batch_memory_recent")]

    def __str__(self):
        return f"{self.get_kind_display()} #{self.pk}"

    @property
    def actor_display(self):
        if self.actor_user_id:
            return self.actor_user.get_username()
        return self.actor_label or self.get_actor_type_display()


class Change(models.Model):
    """One mutation of one lesson, with the lesson's state before and after."""

    class Action(models.TextChoices):
        CREATE = "create", "Created"
        UPDATE = "update", "Edited"
        DELETE = "delete", "Deleted"
        RESTORE = "restore", "Restored"
        PROTECT = "protect", "Protected"
        UNPROTECT = "unprotect", "Unprotected"
        PROMOTE = "promote", "Promoted"
        SUPERSEDE = "supersede", "Superseded"
        CONFIRM = "confirm", "Confirmed"
        REVERT = "revert", "Reverted"

    batch = models.ForeignKey(ChangeBatch, on_delete=models.CASCADE, related_name="changes")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="changes")
    # Read through change_lesson_recent, which leads with lesson.
    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="changes", db_index=False)
    action = models.CharField(max_length=12, choices=Action.choices)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    reverted_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reverts",
        db_index=False,
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["lesson", "-id"], name="change_lesson_recent"),
            models.Index(
                fields=["reverted_by"], name="change_reverted_by", condition=models.Q(reverted_by__isnull=False)
            ),
        ]

    def __str__(self):
        return f"{self.get_action_display()} lesson {self.lesson_id}"


class Interaction(models.Model):
    """What happened in one agent interaction: the input of reflection and of the observer."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        REFLECTED = "reflected", "Reflected"
        FAILED = "failed", "Failed"

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="interactions")
    trigger_type = models.CharField(max_length=50)
    outcome = models.CharField(max_length=200, blank=True)
    summary = models.TextField()
    files_changed = models.JSONField(default=list, blank=True)
    transcript = models.JSONField(default=list, blank=True, help_text="Source entries: [{id, role, at, text}].")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    agent_token = models.ForeignKey("memory.AgentToken", null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    reflected_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.trigger_type}: {self.summary[:60]}"


class AgentToken(models.Model):
    """A bearer token for one persona (optionally one project). Stored as a hash only."""

    persona = models.ForeignKey("personas.Persona", on_delete=models.CASCADE, related_name="tokens")
    project = models.ForeignKey("personas.Project", null=True, blank=True, on_delete=models.CASCADE)
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise a token.")
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.prefix}… ({self.persona})"


class LLMCall(models.Model):
    persona = models.ForeignKey("personas.Persona", null=True, blank=True, on_delete=models.SET_NULL)
    memory = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.SET_NULL)
    purpose = models.CharField(max_length=50)
    provider = models.CharField(max_length=20)
    model_name = models.CharField(max_length=100, blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    outcome = models.CharField(max_length=20, default="ok")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "LLM call"
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="llmcall_recent_idx"),
            # The call log's totals per persona read only this index, already in persona order.
            models.Index(fields=["persona", "outcome", "tokens_in", "tokens_out", "latency_ms"], name="llmcall_totals"),
            # The purposes to filter by: distinct values read from the index, not from every row.
            models.Index(fields=["purpose"], name="llmcall_purpose"),
        ]

    def __str__(self):
        return f"{self.purpose} via {self.provider} ({self.outcome})"
