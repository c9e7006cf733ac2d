"""What ufuzz shows people: ``status`` (:mod:`~ufuzz.reports.status`), ``failures list`` / ``show``
(:mod:`~ufuzz.reports.failures`, :mod:`~ufuzz.reports.ticket`), the HTML report (:mod:`~ufuzz.reports.html`,
:mod:`~ufuzz.reports.plot`, :mod:`~ufuzz.reports.compare`), JUnit XML (:mod:`~ufuzz.reports.junit`), ``bench``
(:mod:`~ufuzz.reports.bench`, :mod:`~ufuzz.reports.planted`, :mod:`~ufuzz.reports.stats`), the texts of a replay and a
corpus check (:mod:`~ufuzz.reports.replay`, :mod:`~ufuzz.reports.regression`) and the standalone reproducer of an HTTP
product's failure (:mod:`~ufuzz.reports.reproducer`). Nothing here decides a failure."""
