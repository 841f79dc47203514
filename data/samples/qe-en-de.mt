Klicken Sie auf die Schaltfläche Speichern .
Öffnen Sie das Datei Menü und wählen Export .
Die Ebene ist ausgeblendet .
Wählen Sie eine Farbe von der Palette .
Sie können nicht rückgängig diese Aktion .
Ziehen Sie das Bild in das Dokumentfenster .
Das Zusatzmodul wurde nicht gefunden .
Drücken Sie Enter zu anwenden die Änderungen .
Wählen Sie Bearbeiten > Voreinstellungen .
Der Text wird angezeigt in dem Bedienfeld .
Speichern Sie den Arbeitsbereich bevor Sie die Anwendung schließen .
Diese Option ist nur verfügbar in Windows .
Die ausgewählten Bilder werden gelöscht .
Geben Sie einen Namen für das neue Symbol .
Klicken Sie OK zu schließen die Dialogfeld .
Die Pinselgröße kann geändert werden .
Schriftarten fehlen .
Stellen Sie sicher , dass der Drucker verbunden ist .
Für mehr Informationen , sehen Hilfe .
Die Animation wird in einer Schleife abgespielt .
